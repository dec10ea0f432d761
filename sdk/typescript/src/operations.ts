// Every operation of the API document (api/openapi.json), by operationId:
// its method and path, and which method of Client sends it. Client builds
// every request from this table, and sdk/sdk_test.go checks it against the
// document, so a route the server gains and the SDK lacks fails the test.

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface Operation {
  readonly method: HttpMethod;
  /** The path as the document writes it: {id}, {path...}, {$}. */
  readonly path: string;
  /**
   * The Client methods that send it. "url" marks pages and proxies meant for
   * a browser or another client (noVNC, Jupyter): Client.url builds their
   * address and Client.request sends anything to them; "mcp" is the Model
   * Context Protocol endpoint, for an MCP client (url("mcp") is its address).
   */
  readonly sdk: readonly string[];
}

export const operations = {
  createJob: { method: "POST", path: "/v1/jobs", sdk: ["schedule"] },
  schedule: { method: "POST", path: "/schedule", sdk: ["schedule"] },
  submit: { method: "POST", path: "/submit", sdk: ["schedule"] },
  status: { method: "GET", path: "/status/{id}", sdk: ["status"] },
  listJobs: { method: "GET", path: "/v1/jobs", sdk: ["listJobs", "allJobs"] },
  getJob: { method: "GET", path: "/v1/jobs/{id}", sdk: ["getJob", "wait"] },
  cancelJob: { method: "POST", path: "/v1/jobs/{id}/cancel", sdk: ["cancel"] },
  setJobEgress: { method: "PUT", path: "/v1/jobs/{id}/egress", sdk: ["setEgress"] },
  listEvents: { method: "GET", path: "/v1/jobs/{id}/events", sdk: ["events", "streamEvents"] },
  downloadTarGz: { method: "GET", path: "/v1/jobs/{id}/artifact.tar.gz", sdk: ["download", "downloadStream"] },
  downloadZip: { method: "GET", path: "/v1/jobs/{id}/artifact.zip", sdk: ["download", "downloadStream"] },
  getDiff: { method: "GET", path: "/v1/jobs/{id}/diff", sdk: ["diff"] },
  workspaceFile: { method: "GET", path: "/v1/jobs/{id}/files/{path...}", sdk: ["listFiles", "readFile", "readText"] },
  writeFile: { method: "PUT", path: "/v1/jobs/{id}/files/{path...}", sdk: ["writeFile"] },
  runCommand: { method: "POST", path: "/v1/jobs/{id}/commands", sdk: ["runCommand"] },
  sendMessage: { method: "POST", path: "/v1/jobs/{id}/messages", sdk: ["sendMessage", "followUp"] },
  pauseJob: { method: "POST", path: "/v1/jobs/{id}/pause", sdk: ["pause"] },
  resumeJob: { method: "POST", path: "/v1/jobs/{id}/resume", sdk: ["resume"] },
  exportTrajectory: { method: "GET", path: "/v1/jobs/{id}/trajectory", sdk: ["trajectory"] },
  desktopLink: { method: "POST", path: "/v1/jobs/{id}/desktop/link", sdk: ["desktopLink"] },
  jupyterLink: { method: "POST", path: "/v1/jobs/{id}/jupyter/link", sdk: ["jupyterLink"] },
  healthz: { method: "GET", path: "/healthz", sdk: ["healthz"] },
  readyz: { method: "GET", path: "/readyz", sdk: ["readyz"] },
  metrics: { method: "GET", path: "/metrics", sdk: ["metrics"] },
  openapi: { method: "GET", path: "/openapi.json", sdk: ["openapi"] },
  mcp: { method: "POST", path: "/mcp", sdk: ["url"] },
  webJobs: { method: "GET", path: "/{$}", sdk: ["url"] },
  webJob: { method: "GET", path: "/jobs/{id}", sdk: ["url"] },
  webEvalRun: { method: "GET", path: "/evals/{run}", sdk: ["url"] },
  webAsset: { method: "GET", path: "/ui/{path...}", sdk: ["url"] },
  desktopPage: { method: "GET", path: "/jobs/{id}/desktop", sdk: ["url"] },
  desktopWebSocket: { method: "GET", path: "/jobs/{id}/desktop/websockify", sdk: ["url"] },
  jupyterGet: { method: "GET", path: "/jobs/{id}/jupyter/{path...}", sdk: ["url", "request"] },
  jupyterPost: { method: "POST", path: "/jobs/{id}/jupyter/{path...}", sdk: ["url", "request"] },
  jupyterPut: { method: "PUT", path: "/jobs/{id}/jupyter/{path...}", sdk: ["url", "request"] },
  jupyterPatch: { method: "PATCH", path: "/jobs/{id}/jupyter/{path...}", sdk: ["url", "request"] },
  jupyterDelete: { method: "DELETE", path: "/jobs/{id}/jupyter/{path...}", sdk: ["url", "request"] },
} as const;

export type OperationId = keyof typeof operations;

// Checked at compile time: every entry is an Operation.
const _check: Record<OperationId, Operation> = operations;
void _check;
