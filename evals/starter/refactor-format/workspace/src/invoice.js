// An invoice as plain text, one line per item.
export function invoiceText(items, currency) {
  const lines = items.map((it) => {
    const cents = Math.round(it.price * it.qty * 100);
    const sign = cents < 0 ? '-' : '';
    const abs = Math.abs(cents);
    const whole = String(Math.floor(abs / 100)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
    const price = `${sign}${currency}${whole}.${String(abs % 100).padStart(2, '0')}`;
    return `${it.name} x${it.qty}: ${price}`;
  });
  return lines.join('\n');
}
