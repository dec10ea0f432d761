// A JSON API over the {{.Nouns}} list: GET /{{.Nouns}}, POST /{{.Nouns}} {"title"},
// POST /{{.Nouns}}/ID/toggle, DELETE /{{.Nouns}}/ID. Kept in memory.
import { createServer } from 'node:http';
import { add{{.Class}}, toggle{{.Class}}, remove{{.Class}}, remaining } from './src/{{.Nouns}}.js';

let {{.Nouns}} = [];

function send(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJSON(req) {
  let data = '';
  for await (const chunk of req) {
    data += chunk;
    if (data.length > 1 << 16) throw new Error('body too large');
  }
  return JSON.parse(data || '{}');
}

const server = createServer(async (req, res) => {
  const [, base, id, action] = req.url.split('/');
  if (base !== '{{.Nouns}}') return send(res, 404, { error: 'not found' });
  try {
    if (req.method === 'GET' && !id) return send(res, 200, { {{.Nouns}}, remaining: remaining({{.Nouns}}) });
    if (req.method === 'POST' && !id) {
      const { title } = await readJSON(req);
      const before = {{.Nouns}}.length;
      {{.Nouns}} = add{{.Class}}({{.Nouns}}, title);
      return {{.Nouns}}.length > before ? send(res, 201, {{.Nouns}}.at(-1)) : send(res, 400, { error: 'title is required' });
    }
    if (req.method === 'POST' && action === 'toggle') {
      {{.Nouns}} = toggle{{.Class}}({{.Nouns}}, Number(id));
      return send(res, 200, { {{.Nouns}} });
    }
    if (req.method === 'DELETE' && id) {
      {{.Nouns}} = remove{{.Class}}({{.Nouns}}, Number(id));
      res.writeHead(204);
      return res.end();
    }
    return send(res, 405, { error: 'method not allowed' });
  } catch (err) {
    return send(res, 400, { error: String(err.message ?? err) });
  }
});

const port = Number(process.env.PORT ?? 3000);
server.listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}/{{.Nouns}}`));
