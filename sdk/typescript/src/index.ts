// The Drydock API client for TypeScript and JavaScript (ESM; needs only fetch).
export { Client, DEFAULT_RETRIES } from "./client.js";
export type { ClientOptions, ListOptions, MessageResult, RequestOptions, ScheduleOptions } from "./client.js";
export { ApiError, ConnectionError, DrydockError, ScheduleError } from "./errors.js";
export { operations } from "./operations.js";
export type { HttpMethod, Operation, OperationId } from "./operations.js";
export * from "./types.js";
export type { components, operations as schemaOperations, paths } from "./schema.js";
