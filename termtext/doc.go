// Package termtext makes text that comes from elsewhere (a server, a
// sandbox, a model, another program's error page) safe to print on a
// terminal, the way git and kubectl do: every character a terminal would
// act on instead of showing is replaced by a visible escape, so a person
// sees that something was there and the terminal does nothing it was not
// asked to by the program itself.
//
// Escaped, in every function:
//   - C0 controls (U+0000–U+001F) and DEL, in caret notation as git and
//     `cat -v` show them: ESC is ^[, BEL ^G, CR ^M, DEL ^?;
//   - C1 controls (U+0080–U+009F; U+009B is a one-character CSI), as \u009b;
//   - bytes that are not UTF-8 (a raw 0x9b is a CSI on an 8-bit terminal),
//     as \x9b;
//   - Unicode's bidirectional embeddings, overrides and isolates
//     (U+202A–U+202E, U+2066–U+2069), which reorder what is shown ("Trojan
//     Source"), as \u202e.
//
// Line escapes newlines and tabs too (for table cells and one-line
// messages: a tab would also shift a tabwriter's columns); Text keeps them
// (for multi-line text such as a tool's output). Escaping is idempotent: the
// output holds nothing that would be escaped again.
//
// A program's own colours stay its own: escape the foreign text first, then
// wrap the result in the program's SGR sequences.
package termtext
