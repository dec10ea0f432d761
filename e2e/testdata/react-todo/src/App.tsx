import { useReducer, useState, type FormEvent } from 'react'
import { initialTodos, remaining, todosReducer } from './todos.ts'

export default function App() {
  const [todos, dispatch] = useReducer(todosReducer, initialTodos)
  const [draft, setDraft] = useState('')

  function submit(e: FormEvent) {
    e.preventDefault()
    dispatch({ type: 'add', text: draft })
    setDraft('')
  }

  const left = remaining(todos)
  return (
    <main className="todo-app">
      <h1>Todos</h1>
      <form onSubmit={submit}>
        <input
          aria-label="New todo"
          placeholder="What needs doing?"
          value={draft}
          onChange={(e) => setDraft(e.target.value)}
        />
        <button type="submit">Add</button>
      </form>
      <ul>
        {todos.map((t) => (
          <li key={t.id} className={t.done ? 'done' : undefined}>
            <label>
              <input type="checkbox" checked={t.done} onChange={() => dispatch({ type: 'toggle', id: t.id })} />
              {t.text}
            </label>
            <button aria-label={`Delete ${t.text}`} onClick={() => dispatch({ type: 'remove', id: t.id })}>
              ×
            </button>
          </li>
        ))}
      </ul>
      <footer>
        <span data-testid="remaining">
          {left} {left === 1 ? 'item' : 'items'} left
        </span>
        <button onClick={() => dispatch({ type: 'clearDone' })}>Clear completed</button>
      </footer>
    </main>
  )
}
