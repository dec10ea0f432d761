import test from 'node:test';
import assert from 'node:assert/strict';
import { invoiceText } from '../src/invoice.js';
import { receiptTotal } from '../src/receipt.js';

const items = [{ name: 'pen', price: 1.5, qty: 2 }, { name: 'desk', price: 1234.5, qty: 1 }];

test('invoice lines', () => {
  assert.equal(invoiceText(items, '$'), 'pen x2: $3.00\ndesk x1: $1,234.50');
});

test('receipt total', () => {
  assert.equal(receiptTotal(items, '€'), 'Total: €1,237.50');
  assert.equal(receiptTotal([{ name: 'refund', price: -0.05, qty: 1 }], '$'), 'Total: -$0.05');
});
