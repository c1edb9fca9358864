'use strict';
// Tidemark's operator console: plain script, no build step. It reads and acts through the
// JSON API only (docs/api.md), with the token the user typed, kept in this tab's
// sessionStorage. Data is written with textContent only, never as HTML: a record may hold
// anything.

const TOKEN_KEY = 'tidemark.apiToken';
const SECTIONS = ['pipelines', 'runs', 'quarantine', 'dead-letters', 'views'];
const OUTCOMES = ['input', 'inserted', 'updated', 'unchanged', 'stale', 'superseded', 'duplicate', 'invalid', 'conflict'];

const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

async function api(method, path) {
  const headers = { Accept: 'application/json' };
  if (token()) headers.Authorization = 'Bearer ' + token();
  // Without a token serve takes a POST only as JSON (no form of another site can send it).
  if (method === 'POST') headers['Content-Type'] = 'application/json';
  const response = await fetch(path, { method, headers, credentials: 'omit', cache: 'no-store' });
  let body = null;
  try {
    body = await response.json();
  } catch (e) {
    body = null;
  }
  if (!response.ok) {
    const reason = body && body.error ? body.error : response.statusText;
    if (response.status === 401) throw new ApiError(401, 'the API token was refused (' + reason + ')');
    throw new ApiError(response.status, method + ' ' + path + ': ' + response.status + ' ' + reason);
  }
  return body;
}

// Follows `next` links until the list ends or `max` items are read.
async function all(path, key, max) {
  let items = [];
  let next = path;
  while (next && items.length < max) {
    const page = await api('GET', next);
    items = items.concat(page[key]);
    next = page.next;
  }
  return items;
}

function say(text, isError) {
  const status = $('status');
  status.textContent = text;
  status.classList.toggle('error', Boolean(isError));
}

// A new element with text; `cls` optional.
function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function row(cells) {
  const tr = document.createElement('tr');
  for (const cell of cells) {
    const td = document.createElement('td');
    if (cell instanceof Node) td.appendChild(cell);
    else td.textContent = cell === null || cell === undefined ? '—' : String(cell);
    tr.appendChild(td);
  }
  return tr;
}

// Each cell names its column (data-label), for the narrow layout where rows become cards.
function labelCells(table) {
  const names = Array.from(table.tHead.rows[0].cells, (th) => th.textContent);
  for (const tr of table.tBodies[0].rows) {
    Array.from(tr.cells).forEach((td, i) => {
      if (td.colSpan === 1 && names[i]) td.dataset.label = names[i];
    });
  }
}

function fill(tbody, rows, columns, emptyText) {
  tbody.replaceChildren();
  if (rows.length === 0) {
    const tr = document.createElement('tr');
    const td = el('td', emptyText, 'empty');
    td.colSpan = columns;
    tr.appendChild(td);
    tbody.appendChild(tr);
    return;
  }
  for (const r of rows) tbody.appendChild(r);
  labelCells(tbody.parentElement);
}

function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return ms + ' ms';
  const s = Math.round(ms / 1000);
  if (s < 120) return s + ' s';
  const m = Math.round(s / 60);
  if (m < 120) return m + ' min';
  const h = Math.round(m / 60);
  if (h < 48) return h + ' h';
  return Math.round(h / 24) + ' d';
}

function when(text) {
  if (!text) return '—';
  const date = new Date(text);
  return isNaN(date) ? text : date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

function button(text, onClick) {
  const b = el('button', text);
  b.type = 'button';
  b.addEventListener('click', onClick);
  return b;
}

// ---- Pipelines

async function loadPipelines() {
  const pipelines = await api('GET', '/v1/pipelines');
  const details = await Promise.all(pipelines.map((p) => api('GET', '/v1/pipelines/' + encodeURIComponent(p.name))));
  const rows = pipelines.map((p, i) => {
    const d = details[i];
    const last = d.last_run;
    const lastText = last ? '#' + last.run_id + ' ' + last.status + (last.finished_at ? ', ' + when(last.finished_at) : '') : 'never';
    const ages = (d.checkpoints || []).map((c) => duration(c.age_ms));
    let next = '—';
    if (p.running) next = 'running now';
    else if (p.queued_run) next = 'queued (#' + p.queued_run + ')';
    else if (p.next_run_at) next = when(p.next_run_at);
    else if (p.schedule) next = 'per ' + p.schedule;
    const dead = (d.destinations || []).reduce((sum, dest) => sum + dest.dead, 0);
    const source = p.source ? p.source.kind + ': ' + (p.source.path || p.source.table || p.source.url || '') : '—';
    return row([p.name, source, p.schedule || 'none', next, lastText, ages.length ? ages.join(', ') : 'none',
      d.open_quarantine, dead]);
  });
  fill($('pipelines-table').tBodies[0], rows, 8, 'No pipelines configured.');
  const select = $('q-pipeline');
  const chosen = select.value;
  select.replaceChildren(el('option', 'any'));
  select.options[0].value = '';
  for (const p of pipelines) {
    const option = el('option', p.name);
    option.value = p.name;
    select.appendChild(option);
  }
  select.value = pipelines.some((p) => p.name === chosen) ? chosen : '';
}

// ---- Runs

let runsChart = null;

// Accepted and rejected records per run over time (uPlot, vendored under vendor/uplot/).
function drawRunsChart(runs) {
  const container = $('runs-chart');
  if (typeof uPlot === 'undefined') return;
  const started = runs.filter((r) => r.started_at).sort((a, b) => Date.parse(a.started_at) - Date.parse(b.started_at));
  const data = [
    started.map((r) => Date.parse(r.started_at) / 1000),
    started.map((r) => r.inserted + r.updated),
    started.map((r) => r.invalid + r.conflict),
  ];
  const width = Math.max(280, container.clientWidth || 600);
  const now = Date.now() / 1000;
  const first = data[0].length ? data[0][0] : now;
  const last = data[0].length ? data[0][data[0].length - 1] : now;
  const pad = Math.max(600, (last - first) * 0.05);
  if (runsChart) runsChart.destroy();
  runsChart = new uPlot({
    width,
    height: 220,
    // UTC, as the tables show times: uPlot's own ticks and legend would be local 12-hour time.
    tzDate: (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC'),
    series: [
      { label: 'Started', value: (u, seconds) => (seconds === null ? '—' : utcTime(seconds)) },
      { label: 'Accepted', stroke: '#0b5cad', width: 2, points: { show: true } },
      { label: 'Rejected', stroke: '#a40e26', width: 2, dash: [6, 4], points: { show: true } },
    ],
    // A fixed span around the runs: one run alone would otherwise spread over years.
    scales: { x: { time: true, auto: false, min: first - pad, max: last + pad } },
    axes: [{ label: 'start time (UTC)', values: utcTicks }, { label: 'records' }],
  }, data, container);
}

function utcTime(seconds) {
  return when(new Date(seconds * 1000).toISOString());
}

// The time axis's labels in UTC and 24-hour time, as precise as the ticks' spacing needs:
// "14:05" (minutes apart), "12-07 14:00" (hours), "2026-12-07" (days and more).
function utcTicks(u, splits, axisIdx, space, increment) {
  return splits.map((seconds) => {
    const text = new Date(seconds * 1000).toISOString();  // YYYY-MM-DDTHH:MM:SS.sssZ
    if (increment >= 86400) return text.slice(0, 10);
    if (increment >= 3600) return text.slice(5, 10) + ' ' + text.slice(11, 16);
    return text.slice(11, 16);
  });
}

window.addEventListener('resize', () => {
  if (runsChart) runsChart.setSize({ width: Math.max(280, $('runs-chart').clientWidth), height: 220 });
});

async function loadRuns() {
  const history = await api('GET', '/v1/runs?limit=500');
  const page = { runs: history.runs.slice(0, 50) };
  const rows = page.runs.map((r) => row(['#' + r.run_id, r.pipeline, r.trigger, r.mode, r.status,
    when(r.started_at), duration(r.duration_ms)].concat(OUTCOMES.map((o) => r[o]))));
  fill($('runs-table').tBodies[0], rows, 16, 'No runs yet.');
  if (!$('runs').hidden) drawRunsChart(history.runs);
  else pendingChart = history.runs;
}

let pendingChart = null;  // drawn once the Runs section shows (a hidden one has no width)

// ---- Quarantine

const entryCache = new Map();  // id -> GET /v1/quarantine/{id}

async function entryOf(id) {
  if (!entryCache.has(id)) entryCache.set(id, await api('GET', '/v1/quarantine/' + id));
  return entryCache.get(id);
}

async function loadQuarantine() {
  const pipeline = $('q-pipeline').value;
  const reason = $('q-reason').value;
  const entity = $('q-entity').value.trim();
  let path = '/v1/quarantine?limit=1000';
  if (pipeline) path += '&pipeline=' + encodeURIComponent(pipeline);
  let entries = await all(path, 'entries', 5000);
  if (reason) entries = entries.filter((e) => e.reason === reason);
  if (entity) {
    // The list does not carry the entity; an entry's own document does.
    const shown = await Promise.all(entries.map((e) => entryOf(e.id)));
    entries = entries.filter((e, i) => shown[i].entity === entity);
  }
  $('quarantine-count').textContent = entries.length + (entries.length === 1 ? ' open entry' : ' open entries');
  // A conflict entry's own document says what its table stores now (a release elsewhere may
  // have changed it since the list was last read).
  const conflicts = entries.filter((e) => e.reason === 'conflict');
  for (const e of conflicts) entryCache.delete(e.id);
  const documents = new Map(await Promise.all(conflicts.map(async (e) => [e.id, await entryOf(e.id)])));
  const rows = entries.map((e) => {
    const actions = el('span', null, 'actions');
    actions.appendChild(button('Show', () => showEntry(e.id).catch(fail)));
    const blocked = documents.has(e.id) ? conflictsAgain(documents.get(e.id)) : null;
    if (blocked) actions.appendChild(el('span', blocked, 'no-release'));
    else actions.appendChild(button('Release', () => releaseEntry(e.id).catch(fail)));
    const tr = row([e.id, e.pipeline, e.reason, e.transaction_id, e.source_revision, e.position, e.detail, actions]);
    tr.dataset.entry = e.id;
    return tr;
  });
  fill($('quarantine-table').tBodies[0], rows, 8, 'No open entries.');
}

// Why a conflict entry is not offered a Release, or null: its table stores a row of the
// entry's own revision, which the record differs from, so a release could only conflict
// again until someone changes that row (docs/console.md).
function conflictsAgain(entry) {
  if (entry.reason !== 'conflict' || !entry.stored || entry.stored.row === null) return null;
  if (entry.stored.revision === null || entry.stored.revision !== entry.source_revision) return null;
  return 'No release: ' + entry.stored.table + ' stores revision ' + entry.stored.revision +
    ' of this key with other values; a release would conflict again unless that row changes.';
}

async function showEntry(id) {
  entryCache.delete(id);
  const entry = await entryOf(id);
  $('entry-title').textContent = 'Entry ' + entry.id + ': ' + entry.reason;
  const facts = $('entry-facts');
  facts.replaceChildren();
  const pairs = [['Pipeline', entry.pipeline], ['Entity', entry.entity], ['Key', entry.transaction_id],
    ['Revision', entry.source_revision], ['Field', entry.field], ['Detail', entry.detail],
    ['Position', entry.position], ['Quarantined', when(entry.created_at)],
    ['Released', entry.released_at ? when(entry.released_at) + ' (' + entry.release_outcome + ')' : 'no']];
  for (const [name, value] of pairs) {
    facts.appendChild(el('dt', name));
    facts.appendChild(el('dd', value === null || value === undefined ? '—' : value));
  }
  $('entry-raw').textContent = entry.raw;
  $('entry-stored').textContent = !entry.stored ? 'Unknown (no valid key, or an entity serve does not load).'
    : entry.stored.row === null ? 'No row in ' + entry.stored.table + ' for this key.'
    : entry.stored.table + ':\n' + JSON.stringify(entry.stored.row, null, 2);
  const panel = $('quarantine-entry');
  panel.hidden = false;
  panel.focus();
}

async function releaseEntry(id) {
  const result = await api('POST', '/v1/quarantine/' + id + '/release');
  entryCache.delete(id);
  $('quarantine-entry').hidden = true;
  await loadQuarantine();
  await loadPipelines();
  say('Released entry ' + id + ': ' + result.outcome + '.');
  $('status').focus();  // its row is gone: keep the keyboard user's place near the news
}

// ---- Dead letters

async function loadDeadLetters() {
  const events = await all('/v1/outbox?status=dead&limit=1000', 'events', 5000);
  $('dead-count').textContent = events.length + (events.length === 1 ? ' dead letter' : ' dead letters');
  const byDestination = new Map();
  for (const e of events) {
    if (!byDestination.has(e.destination)) byDestination.set(e.destination, []);
    byDestination.get(e.destination).push(e);
  }
  const container = $('dead-destinations');
  container.replaceChildren();
  for (const [destination, list] of byDestination) {
    const block = el('div', null, 'destination');
    block.dataset.destination = destination;
    block.appendChild(el('h3', destination + ' (' + list.length + ' dead)'));
    const last = list[list.length - 1];
    block.appendChild(el('p', 'Last error: ' + (last.last_error || 'none recorded')));
    const wrap = el('div', null, 'scroll');
    const table = document.createElement('table');
    table.appendChild(el('caption', 'Dead letters of ' + destination));
    const head = document.createElement('thead');
    const hr = document.createElement('tr');
    for (const name of ['Event', 'Idempotency key', 'Partition', 'Sequence', 'Attempts', 'Last error', 'Created', 'Action']) {
      const th = el('th', name);
      th.scope = 'col';
      hr.appendChild(th);
    }
    head.appendChild(hr);
    table.appendChild(head);
    const body = document.createElement('tbody');
    for (const e of list) {
      const tr = row([e.id, e.idempotency_key, e.partition_key, e.sequence, e.attempts, e.last_error,
        when(e.created_at), button('Retry', () => retryEvent(e.id).catch(fail))]);
      tr.dataset.event = e.id;
      body.appendChild(tr);
    }
    table.appendChild(body);
    labelCells(table);
    wrap.appendChild(table);
    block.appendChild(wrap);
    container.appendChild(block);
  }
  if (byDestination.size === 0) container.appendChild(el('p', 'No dead letters.', 'empty'));
}

async function retryEvent(id) {
  const event = await api('POST', '/v1/outbox/' + id + '/retry');
  await loadDeadLetters();
  say('Event ' + id + ' is ' + event.status + ' again: the relay delivers it now.');
  $('status').focus();
}

// ---- Views

async function loadViews() {
  const page = await api('GET', '/v1/views');
  const rows = page.views.map((v) => row([v.view, v.version, v.table, v.status, duration(v.lag_ms), v.pending, v.dead,
    when(v.created_at), v.position]));
  fill($('views-table').tBodies[0], rows, 9, 'No views.');
}

// ---- Navigation and start-up

function fail(error) {
  say(error.message, true);
}

function show(section) {
  if (!SECTIONS.includes(section)) section = 'pipelines';
  for (const id of SECTIONS) $(id).hidden = id !== section;
  if (section === 'runs' && pendingChart) {
    drawRunsChart(pendingChart);
    pendingChart = null;
  }
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.section === section) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

let loads = 0;  // the latest loadAll's number: an older one that ends later says nothing

// Reads every section; `onRefused`, when given, replaces the error message when the API
// refuses the request for want of a token (the first load, before one was asked for).
async function loadAll(onRefused) {
  const mine = ++loads;
  delete document.body.dataset.loaded;
  say('Loading…');
  try {
    await loadPipelines();
    await Promise.all([loadRuns(), loadQuarantine(), loadDeadLetters(), loadViews()]);
    if (mine !== loads) return;
    say('Loaded at ' + when(new Date().toISOString()) + '.');
    document.body.dataset.loaded = 'true';
  } catch (error) {
    if (mine !== loads) return;
    if (onRefused && error.status === 401 && !token()) onRefused();
    else fail(error);
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('token').value = token();
  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value);
    loadAll();
  });
  $('refresh').addEventListener('click', () => loadAll());
  $('quarantine-filter').addEventListener('submit', (event) => {
    event.preventDefault();
    loadQuarantine().catch(fail);
  });
  window.addEventListener('hashchange', () => show(location.hash.slice(1)));
  show(location.hash.slice(1));
  // Serve may need no token: try without one, and ask only when the API refuses (401).
  loadAll(() => say('Enter the API token and press Connect.'));
});
