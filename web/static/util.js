// Small DOM and formatting helpers shared by the pages.

// h builds an element: h('button', {type: 'button', onclick}, 'Cancel').
// Text children are inserted as text, never parsed as HTML.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function age(iso, now = Date.now()) {
  if (!iso) return '';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d`;
}

export function duration(fromISO, toISO) {
  if (!fromISO) return '';
  return age(fromISO, toISO ? Date.parse(toISO) : Date.now());
}

export function cost(usage) {
  const c = usage?.cost_usd || 0;
  if (!c) return '—';
  return c < 0.01 ? `$${c.toFixed(4)}` : `$${c.toFixed(2)}`;
}

export function tokens(usage) {
  const n = (usage?.input_tokens || 0) + (usage?.output_tokens || 0);
  return n ? n.toLocaleString() : '—';
}

export function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1 << 30) return `${(n / (1 << 20)).toFixed(1)} MiB`;
  return `${(n / (1 << 30)).toFixed(2)} GiB`;
}

export function statusPill(status) {
  return h('span', { class: `pill status-${status}` }, status);
}

export const terminal = (s) => s === 'complete' || s === 'error' || s === 'cancelled';

export function firstLine(s, max = 140) {
  const line = (s || '').split('\n', 1)[0];
  return line.length > max ? line.slice(0, max - 1) + '…' : line;
}
