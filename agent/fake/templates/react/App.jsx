import { useState } from 'react';
import { add{{.Class}}, toggle{{.Class}}, remove{{.Class}}, remaining } from './{{.Nouns}}.js';

export default function App() {
  const [{{.Nouns}}, set{{.Classes}}] = useState([]);
  const [title, setTitle] = useState('');

  function submit(e) {
    e.preventDefault();
    set{{.Classes}}(add{{.Class}}({{.Nouns}}, title));
    setTitle('');
  }

  return (
    <main>
      <h1>{{.Title}}</h1>
      <form onSubmit={submit}>
        <input value={title} onChange={(e) => setTitle(e.target.value)} placeholder="What needs doing?" aria-label="New {{.Noun}}" />
        <button type="submit">Add</button>
      </form>
      <ul>
        {{"{"}}{{.Nouns}}.map((x) => (
          <li key={x.id}>
            <label>
              <input type="checkbox" checked={x.done} onChange={() => set{{.Classes}}(toggle{{.Class}}({{.Nouns}}, x.id))} /> {x.title}
            </label>
            <button type="button" onClick={() => set{{.Classes}}(remove{{.Class}}({{.Nouns}}, x.id))} aria-label={`Remove ${x.title}`}>
              ×
            </button>
          </li>
        ))}
      </ul>
      <p>{remaining({{.Nouns}})} left</p>
    </main>
  );
}
