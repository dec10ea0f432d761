cat > slugify.js <<'JS'
// slugify turns a title into a URL path segment: lower case, accents
// dropped, runs of anything else joined by single dashes.
export function slugify(title) {
  return title.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').toLowerCase()
    .replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
}
JS
