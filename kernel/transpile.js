// Transpiles TypeScript to JavaScript without type checking (like
// ts-node --transpile-only or tsx), for one long-lived node process: loading
// the compiler takes most of a second, transpiling a snippet milliseconds.
//
// argv: <typescript module dir>
// stdin, one JSON object a line: {"code": "...", "esm": true|false}
// stdout, one JSON object a line: {"js": "..."} or {"errors": ["main.ts(1,5): error TS1005: ..."]}
"use strict";
const readline = require("readline");
const ts = require(process.argv[1]);

function transpile(code, esm) {
  const out = ts.transpileModule(code, {
    fileName: "main.ts",
    reportDiagnostics: true,
    compilerOptions: {
      target: ts.ScriptTarget.ES2022,
      module: esm ? ts.ModuleKind.ESNext : ts.ModuleKind.CommonJS,
      esModuleInterop: true,
      sourceMap: false,
    },
  });
  const errors = (out.diagnostics || [])
    .filter((d) => d.category === ts.DiagnosticCategory.Error)
    .map((d) => {
      let where = "main.ts";
      if (d.file && d.start !== undefined) {
        const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
        where += `(${line + 1},${character + 1})`;
      }
      return `${where}: error TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
    });
  return errors.length > 0 ? { errors } : { js: out.outputText };
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let reply;
  try {
    const req = JSON.parse(line);
    reply = transpile(req.code, req.esm);
  } catch (e) {
    reply = { errors: [`transpiler: ${e && e.message}`] };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
rl.on("close", () => process.exit(0));
process.stdout.write(JSON.stringify({ ready: true }) + "\n");
