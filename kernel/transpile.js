// Transpiles TypeScript read from stdin to JavaScript on stdout, without
// type checking (like ts-node --transpile-only or tsx): one node process and
// no tsconfig, so it answers in a fraction of tsc's time. Syntax errors are
// reported on stderr with exit status 2.
//
// argv: <typescript module dir> <"esm"|"cjs">
"use strict";
const ts = require(process.argv[1]);
const esm = process.argv[2] === "esm";

let src = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (src += chunk));
process.stdin.on("end", () => {
  const out = ts.transpileModule(src, {
    fileName: "main.ts",
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: esm ? ts.ModuleKind.ESNext : ts.ModuleKind.CommonJS,
      esModuleInterop: true,
      sourceMap: false,
    },
  });
  const errors = (out.diagnostics || []).filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0) {
    for (const d of errors) {
      let where = "main.ts";
      if (d.file && d.start !== undefined) {
        const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
        where += `(${line + 1},${character + 1})`;
      }
      process.stderr.write(`${where}: error TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}\n`);
    }
    process.exit(2);
  }
  process.stdout.write(out.outputText);
});
