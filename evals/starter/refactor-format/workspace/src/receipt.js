// A receipt's total line.
export function receiptTotal(items, currency) {
  const cents = Math.round(items.reduce((s, it) => s + it.price * it.qty, 0) * 100);
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  const whole = String(Math.floor(abs / 100)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `Total: ${sign}${currency}${whole}.${String(abs % 100).padStart(2, '0')}`;
}
