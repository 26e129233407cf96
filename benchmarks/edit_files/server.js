'use strict';

const http = require('http');
const { URL } = require('url');

const PORT = process.env.PORT || 8080;
const todos = new Map();
let nextId = 1;

function sendJson(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let data = '';
    req.on('data', (chunk) => {
      data += chunk;
      if (data.length > 1e6) {
        reject(new Error('body too large'));
        req.destroy();
      }
    });
    req.on('end', () => resolve(data));
    req.on('error', reject);
  });
}

async function handle(req, res) {
  const url = new URL(req.url, `http://${req.headers.host}`);
  if (url.pathname === '/todos' && req.method === 'GET') {
    return sendJson(res, 200, { todos: [...todos.values()] });
  }
  if (url.pathname === '/todos' && req.method === 'POST') {
    const body = JSON.parse(await readBody(req));
    if (!body.title) {
      return sendJson(res, 400, { error: "missing \"title\"" });
    }
    const todo = { id: nextId++, title: body.title, done: false };
    todos.set(todo.id, todo);
    return sendJson(res, 201, todo);
  }
  const match = url.pathname.match(/^\/todos\/(\d+)$/);
  if (match && req.method === 'DELETE') {
    const id = Number(match[1]);
    if (!todos.delete(id)) {
      return sendJson(res, 404, { error: 'not found' });
    }
    res.writeHead(204);
    return res.end();
  }
  sendJson(res, 404, { error: 'no route' });
}

http.createServer((req, res) => {
  handle(req, res).catch((err) => sendJson(res, 500, { error: err.message }));
}).listen(PORT, () => console.log(`listening on :${PORT}`));
