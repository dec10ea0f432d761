// slugify turns a title into a URL path segment: lower case, words joined
// by single dashes.
export function slugify(title) {
  return title.toLowerCase().replace(/ /g, '-').replace(/[^a-z0-9-]/g, '');
}
