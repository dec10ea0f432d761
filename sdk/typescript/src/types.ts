// Names for the generated schema types (src/schema.ts, written by
// openapi-typescript from api/openapi.json: `npm run generate` or `make sdk`).
import type { components } from "./schema.js";

type Schemas = components["schemas"];

export type Job = Schemas["Job"];
export type JobStatus = Job["status"];
export type CreateJob = Schemas["CreateJob"];
export type JobPage = Schemas["JobPage"];
export type Event = Schemas["Event"];
export type EventType = NonNullable<Event["type"]>;
export type EventPage = Schemas["EventPage"];
/** The data of each type of event (the root package's eventdata.go). */
export interface EventDataByType {
  status: Schemas["StatusEvent"];
  log: Schemas["LogEvent"];
  model: Schemas["ModelEvent"];
  tool_call: Schemas["ToolCallEvent"];
  observation: Schemas["ObservationEvent"];
  usage: Schemas["UsageEvent"];
  error: Schemas["ErrorEvent"];
  condensation: Schemas["CondensationEvent"];
  artifact: Schemas["ArtifactEvent"];
  summary: Schemas["SummaryEvent"];
  user_message: Schemas["UserMessage"];
  paused: Schemas["PauseEvent"];
  resumed: Schemas["PauseEvent"];
}
/** The data of an event of type T: `(e.data as EventData<"log">).kind` once `e.type === "log"`. */
export type EventData<T extends EventType> = EventDataByType[T];
export type FileInfo = Schemas["FileInfo"];
export type Listing = Schemas["Listing"];
export type Link = Schemas["Link"];
export type LinkRequest = Schemas["LinkRequest"];
export type Repo = Schemas["Repo"];
export type MessageRequest = Schemas["MessageRequest"];
export type FollowUpRequest = Schemas["FollowUpRequest"];
export type ErrorBody = Schemas["Error"];
export type Trajectory = Schemas["Trajectory"];
export type EgressRequest = Schemas["EgressRequest"];
/** A duration: "90s", "15m", or a number of seconds. */
export type Duration = Schemas["Duration"];
export type CommandRequest = Schemas["CommandRequest"];
export type CommandResult = Schemas["CommandResult"];
export type WriteFileRequest = Schemas["WriteFileRequest"];
export type WrittenFile = Schemas["WrittenFile"];

/** The statuses after which a job changes no more. */
export const terminalStatuses: readonly JobStatus[] = ["complete", "error", "cancelled"];

export function isTerminal(status: JobStatus | string | undefined): boolean {
  return (terminalStatuses as readonly string[]).includes(status ?? "");
}
