// The todo list's state and every change to it, as a reducer: pure, so the
// tests check it without a DOM and App only dispatches.
export type Todo = { id: number; text: string; done: boolean }

export type Action =
  | { type: 'add'; text: string }
  | { type: 'toggle'; id: number }
  | { type: 'remove'; id: number }
  | { type: 'clearDone' }

export const initialTodos: Todo[] = [
  { id: 1, text: 'Scaffold the app with Vite', done: true },
  { id: 2, text: 'Write the todo components', done: false },
]

export function todosReducer(todos: Todo[], action: Action): Todo[] {
  switch (action.type) {
    case 'add': {
      const text = action.text.trim()
      if (text === '') return todos
      const id = todos.reduce((m, t) => Math.max(m, t.id), 0) + 1
      return [...todos, { id, text, done: false }]
    }
    case 'toggle':
      return todos.map((t) => (t.id === action.id ? { ...t, done: !t.done } : t))
    case 'remove':
      return todos.filter((t) => t.id !== action.id)
    case 'clearDone':
      return todos.filter((t) => !t.done)
  }
}

export function remaining(todos: Todo[]): number {
  return todos.filter((t) => !t.done).length
}
