import { h, Fragment } from "./jsx.js";
import { Action, Filter, State, Todo, remaining, visible } from "./todos.js";

export type Dispatch = (a: Action) => void;

function TodoItem({ todo, dispatch }: { todo: Todo; dispatch: Dispatch }) {
  return (
    <li className={todo.done ? "todo done" : "todo"} data-id={todo.id}>
      <input type="checkbox" checked={todo.done} onClick={() => dispatch({ type: "toggle", id: todo.id })} />
      <span>{todo.text}</span>
      <button onClick={() => dispatch({ type: "remove", id: todo.id })}>Delete</button>
    </li>
  );
}

const filters: Filter[] = ["all", "active", "done"];

export function TodoApp({ state, dispatch }: { state: State; dispatch: Dispatch }) {
  const left = remaining(state);
  return (
    <>
      <h1>Todos</h1>
      <form id="new-todo">
        <input name="text" placeholder="What needs doing?" />
        <button type="submit">Add</button>
      </form>
      <ul className="todos">
        {visible(state).map((t) => (
          <TodoItem key={t.id} todo={t} dispatch={dispatch} />
        ))}
      </ul>
      <footer>
        <span className="count">
          {left} {left === 1 ? "item" : "items"} left
        </span>
        {filters.map((f) => (
          <button key={f} className={f === state.filter ? "filter selected" : "filter"} onClick={() => dispatch({ type: "filter", filter: f })}>
            {f}
          </button>
        ))}
        <button onClick={() => dispatch({ type: "clearDone" })}>Clear completed</button>
      </footer>
    </>
  );
}
