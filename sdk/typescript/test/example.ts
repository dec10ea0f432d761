// Compiled (not run) by sdk/sdk_test.go: the README's example and the calls
// a user writes most must type-check against the generated types.
import { ApiError, Client, ScheduleError, type CommandResult, type Event, type EventData, type EventDataByType, type EventType, type Job } from "../src/index.js";

export async function example(token: string): Promise<string | undefined> {
  const dd = new Client({ baseUrl: "http://127.0.0.1:8080", token });
  const job: Job = await dd.schedule({ task: "Write a CLI todo app in Python", egress: [], metadata: { team: "a" } });
  for await (const e of dd.streamEvents(job.job_id)) {
    const t: Event["type"] = e.type;
    void t;
    if (e.type === "log" && (e.data as EventData<"log">).kind === "sandbox_held") break;
    if (e.type === "artifact") console.log((e.data as EventData<"artifact">).size);
  }
  try {
    await dd.followUp(job.job_id, { text: "Add tests", max_steps: 20 });
  } catch (err) {
    if (err instanceof ScheduleError) return err.key;
    if (err instanceof ApiError && err.status === 404) return err.code;
  }
  const held = await dd.schedule({ agent: "none", timeout: 1800 });
  await dd.writeFile(held.job_id, "src/app.py", "print('hi')\n");
  const ran: CommandResult = await dd.runCommand(held.job_id, "python3 src/app.py", { timeout: "2m" });
  if (ran.exit_code !== 0) return ran.output;
  const files = await dd.listFiles(job.job_id, "src");
  return (await dd.wait(job.job_id)).summary ?? files.entries[0]?.name;
}

// Every type of event has its data in EventDataByType: this fails to
// compile when the API adds a type without it.
const everyTypeHasData: [Exclude<EventType, keyof EventDataByType>] extends [never] ? true : false = true;
void everyTypeHasData;
