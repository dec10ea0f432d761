cat > src/money.js <<'JS'
// formatMoney formats an amount in cents: sign, currency, thousands, 2 decimals.
export function formatMoney(cents, currency) {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  const whole = String(Math.floor(abs / 100)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${sign}${currency}${whole}.${String(abs % 100).padStart(2, '0')}`;
}
JS
cat > src/invoice.js <<'JS'
import { formatMoney } from './money.js';

// An invoice as plain text, one line per item.
export function invoiceText(items, currency) {
  return items.map((it) => `${it.name} x${it.qty}: ${formatMoney(Math.round(it.price * it.qty * 100), currency)}`).join('\n');
}
JS
cat > src/receipt.js <<'JS'
import { formatMoney } from './money.js';

// A receipt's total line.
export function receiptTotal(items, currency) {
  return `Total: ${formatMoney(Math.round(items.reduce((s, it) => s + it.price * it.qty, 0) * 100), currency)}`;
}
JS
cat > test/money.test.js <<'JS'
import test from 'node:test';
import assert from 'node:assert/strict';
import { formatMoney } from '../src/money.js';

test('formatMoney', () => {
  assert.equal(formatMoney(123456, '$'), '$1,234.56');
});
JS
