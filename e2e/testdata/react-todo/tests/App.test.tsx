// @vitest-environment jsdom
import { act } from 'react'
import { createRoot, type Root } from 'react-dom/client'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import App from '../src/App.tsx'
import { initialTodos, remaining, todosReducer } from '../src/todos.ts'

declare global {
  var IS_REACT_ACT_ENVIRONMENT: boolean
}
globalThis.IS_REACT_ACT_ENVIRONMENT = true

describe('todosReducer', () => {
  it('adds a trimmed todo with the next id and ignores blank ones', () => {
    const next = todosReducer(initialTodos, { type: 'add', text: '  Ship it  ' })
    expect(next.at(-1)).toEqual({ id: 3, text: 'Ship it', done: false })
    expect(todosReducer(initialTodos, { type: 'add', text: '   ' })).toBe(initialTodos)
  })

  it('toggles, removes and clears completed todos', () => {
    const toggled = todosReducer(initialTodos, { type: 'toggle', id: 2 })
    expect(remaining(toggled)).toBe(0)
    expect(todosReducer(initialTodos, { type: 'remove', id: 1 }).map((t) => t.id)).toEqual([2])
    expect(todosReducer(initialTodos, { type: 'clearDone' }).map((t) => t.id)).toEqual([2])
  })
})

describe('App', () => {
  let host: HTMLDivElement
  let root: Root
  beforeEach(() => {
    host = document.createElement('div')
    document.body.append(host)
    root = createRoot(host)
    act(() => root.render(<App />))
  })
  afterEach(() => {
    act(() => root.unmount())
    host.remove()
  })

  const count = () => host.querySelector('[data-testid="remaining"]')!.textContent

  it('lists the todos and counts what is left', () => {
    expect(host.querySelectorAll('li')).toHaveLength(2)
    expect(count()).toBe('1 item left')
  })

  it('adds a todo typed into the form', () => {
    const input = host.querySelector<HTMLInputElement>('input[aria-label="New todo"]')!
    act(() => {
      // React tracks the input's value; set it the way a browser would.
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, 'Write tests')
      input.dispatchEvent(new Event('input', { bubbles: true }))
    })
    act(() => host.querySelector('form')!.requestSubmit())
    expect([...host.querySelectorAll('li')].map((li) => li.textContent)).toContain('Write tests×')
    expect(count()).toBe('2 items left')
  })

  it('checks a todo off and clears it', () => {
    act(() => host.querySelectorAll<HTMLInputElement>('li input[type="checkbox"]')[1].click())
    expect(count()).toBe('0 items left')
    const clear = [...host.querySelectorAll('button')].find((b) => b.textContent === 'Clear completed')!
    act(() => clear.click())
    expect(host.querySelectorAll('li')).toHaveLength(0)
  })
})
