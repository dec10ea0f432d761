// The app's state and every change to it, as a pure reducer with the shape
// React's useReducer expects: (state, action) => state, never mutating.

export interface Todo {
  id: number;
  text: string;
  done: boolean;
}

export type Filter = "all" | "active" | "done";

export interface State {
  todos: Todo[];
  filter: Filter;
  nextId: number;
}

export type Action =
  | { type: "add"; text: string }
  | { type: "toggle"; id: number }
  | { type: "remove"; id: number }
  | { type: "edit"; id: number; text: string }
  | { type: "clearDone" }
  | { type: "filter"; filter: Filter };

export const initialState: State = { todos: [], filter: "all", nextId: 1 };

export function reducer(state: State, action: Action): State {
  switch (action.type) {
    case "add": {
      const text = action.text.trim();
      if (text === "") return state;
      return { ...state, todos: [...state.todos, { id: state.nextId, text, done: false }], nextId: state.nextId + 1 };
    }
    case "toggle":
      return { ...state, todos: state.todos.map((t) => (t.id === action.id ? { ...t, done: !t.done } : t)) };
    case "remove":
      return { ...state, todos: state.todos.filter((t) => t.id !== action.id) };
    case "edit": {
      const text = action.text.trim();
      if (text === "") return reducer(state, { type: "remove", id: action.id });
      return { ...state, todos: state.todos.map((t) => (t.id === action.id ? { ...t, text } : t)) };
    }
    case "clearDone":
      return { ...state, todos: state.todos.filter((t) => !t.done) };
    case "filter":
      return { ...state, filter: action.filter };
  }
}

export function visible(state: State): Todo[] {
  switch (state.filter) {
    case "active":
      return state.todos.filter((t) => !t.done);
    case "done":
      return state.todos.filter((t) => t.done);
    default:
      return state.todos;
  }
}

export function remaining(state: State): number {
  return state.todos.filter((t) => !t.done).length;
}
