// pincer's web UI: plain JavaScript, no framework, no build step.
// Everything the agent, a tool or the trail says is shown with
// textContent, never parsed as HTML.
'use strict';

const $ = (id) => document.getElementById(id);
const KEY = 'pincer.token';
let token = sessionStorage.getItem(KEY);
let role = null;
let ws = null;
let turn = null; // {li, text} of the reply being streamed
let auditBefore = null;
let polling = null;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function short(v, n) {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > n ? s.slice(0, n) + '…' : s;
}

// ---- API ------------------------------------------------------------

async function api(path, opts = {}) {
  const headers = { 'Authorization': 'Bearer ' + token };
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, {
    method: opts.method || 'GET',
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    cache: 'no-store',
  });
  if (r.status === 401) {
    forget('This browser is not paired any more (its token was revoked). Pair it again.');
    throw new Error('unauthorized');
  }
  const text = await r.text();
  let data;
  try { data = JSON.parse(text); } catch (_) { data = { error: text }; }
  if (!r.ok) throw new Error(data.error || ('HTTP ' + r.status));
  return data;
}

// ---- Pairing --------------------------------------------------------

async function pair(ev) {
  ev.preventDefault();
  const code = $('code').value.trim();
  const status = $('pair-status');
  if (!/^[0-9]{6}$/.test(code)) {
    status.textContent = 'A pairing code is six digits.';
    $('code').setAttribute('aria-invalid', 'true');
    $('code').focus();
    return;
  }
  $('code').removeAttribute('aria-invalid');
  status.textContent = 'Pairing…';
  try {
    const r = await fetch('/pair', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ code }),
    });
    const data = await r.json().catch(() => ({}));
    if (!r.ok) {
      status.textContent = (data.error || ('HTTP ' + r.status)) + '.';
      $('code').setAttribute('aria-invalid', 'true');
      $('code').select();
      return;
    }
    token = data.token;
    sessionStorage.setItem(KEY, token);
    $('code').value = '';
    status.textContent = '';
    await start();
  } catch (e) {
    status.textContent = 'Pairing failed: ' + e.message;
  }
}

function forget(why) {
  sessionStorage.removeItem(KEY);
  token = null;
  role = null;
  if (ws) { ws.onclose = null; ws.close(); ws = null; }
  if (polling) { clearInterval(polling); polling = null; }
  $('app').hidden = true;
  $('forget').hidden = true;
  $('who').textContent = '';
  $('pair').hidden = false;
  $('pair-status').textContent = why || '';
  $('code').focus();
}

async function start() {
  const me = await api('/api/whoami');
  role = me.role;
  $('who').textContent = 'Paired as ' + me.principal + ' (' + me.role + ')';
  $('pair').hidden = true;
  $('app').hidden = false;
  $('forget').hidden = false;
  $('approvals-note').textContent = role === 'approver'
    ? 'This browser may approve or deny the calls below.'
    : 'This browser\'s token has the chat role: it sees the calls waiting but cannot answer them.';
  $('message').focus();
  connect();
  refreshApprovals();
  refreshAudit(true);
  refreshStatus();
  polling = setInterval(() => {
    if (document.visibilityState === 'visible') refreshApprovals();
  }, 3000);
}

// ---- Chat -----------------------------------------------------------

function logLine(cls, who, text) {
  const li = el('li', cls);
  if (who) li.append(el('span', 'who', who));
  const body = el('span', 'text', text || '');
  li.append(body);
  $('log').append(li);
  $('log').scrollTop = $('log').scrollHeight;
  return { li, text: body };
}

function connect() {
  if (ws && ws.readyState <= 1) return ws;
  const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws';
  ws = new WebSocket(url, ['pincer.v1', 'bearer.' + token]);
  $('conn').textContent = 'connecting…';
  ws.onopen = () => { $('conn').textContent = 'connected'; };
  ws.onclose = () => {
    $('conn').textContent = 'not connected';
    endTurn();
  };
  ws.onmessage = (m) => {
    let e;
    try { e = JSON.parse(m.data); } catch (_) { return; }
    onEvent(e);
  };
  return ws;
}

function endTurn() {
  if (turn) turn.li.removeAttribute('aria-busy');
  turn = null;
  $('send').disabled = false;
  $('cancel').disabled = true;
}

const MARKS = { ok: '✓', error: '✗', blocked: '⛔', denied: '✋' };

function onEvent(e) {
  switch (e.event) {
    case 'turn_started':
      turn = logLine('agent', 'pincer:', '');
      turn.li.setAttribute('aria-busy', 'true');
      break;
    case 'text_delta':
      if (!turn) turn = logLine('agent', 'pincer:', '');
      turn.text.textContent += e.text;
      $('log').scrollTop = $('log').scrollHeight;
      break;
    case 'approval_needed':
      logLine('wait', '', 'Waiting for approval: ' + e.name + ' (' + e.risk + ' risk: ' + e.why + '). See Approvals.');
      refreshApprovals();
      break;
    case 'tool_call_started':
      logLine('tool', '', '⚙ ' + e.name + ' ' + short(e.arguments, 200) + ' (' + e.risk + ' risk)');
      break;
    case 'tool_call_finished':
      logLine('tool', '', (MARKS[e.status] || '•') + ' ' + e.name + ': ' + short(e.preview.split('\n')[0], 300));
      refreshApprovals();
      // The reply after tools streams into a fresh line.
      if (turn) { turn.li.removeAttribute('aria-busy'); turn = null; }
      break;
    case 'provider_failed':
      logLine('error', '', 'provider ' + e.provider + ' failed: ' + e.error);
      break;
    case 'repaired':
      logLine('tool', '', 'closed ' + e.closed_calls.length + ' tool call(s) an earlier turn left open');
      break;
    case 'trimmed':
      logLine('tool', '', 'trimmed ' + e.dropped_turns + ' old turn(s) to fit the context');
      break;
    case 'turn_done':
      endTurn();
      refreshAudit(true);
      break;
    case 'turn_failed':
    case 'error':
      logLine('error', '', e.error);
      endTurn();
      break;
    case 'turn_cancelled':
      logLine('tool', '', 'turn cancelled; the session stays valid');
      endTurn();
      break;
    default:
      break;
  }
}

function send(ev) {
  ev.preventDefault();
  const text = $('message').value;
  if (!text.trim()) { $('message').focus(); return; }
  const socket = connect();
  const go = () => {
    logLine('user', 'you:', text);
    socket.send(JSON.stringify({ type: 'turn', session: $('session').value.trim() || 'web', text }));
    $('message').value = '';
    $('send').disabled = true;
    $('cancel').disabled = false;
  };
  if (socket.readyState === 1) go();
  else socket.addEventListener('open', go, { once: true });
}

function cancel() {
  if (ws && ws.readyState === 1) ws.send(JSON.stringify({ type: 'cancel' }));
}

// ---- Approvals ------------------------------------------------------

async function answer(id, approve, reason) {
  const status = $('approvals-status');
  try {
    const path = '/api/approvals/' + encodeURIComponent(id) + (approve ? '/approve' : '/deny');
    const r = await api(path, { method: 'POST', body: approve ? undefined : { reason } });
    status.textContent = (approve ? 'Approved ' : 'Denied ') + r.approval.tool + ' (recorded as ' + r.by + ').';
  } catch (e) {
    status.textContent = 'Could not answer: ' + e.message;
  }
  refreshApprovals();
}

async function refreshApprovals() {
  if (!token) return;
  let data;
  try { data = await api('/api/approvals'); } catch (_) { return; }
  const list = $('approvals-list');
  const open = new Set(data.pending.map((p) => p.id));
  for (const li of [...list.children]) if (!open.has(li.dataset.id)) li.remove();
  for (const p of data.pending) {
    if (list.querySelector('[data-id="' + p.id + '"]')) continue;
    const li = el('li');
    li.dataset.id = p.id;
    const h = el('h3', '', p.tool + ' — ' + p.risk + ' risk');
    li.append(h);
    li.append(el('p', '', p.why));
    li.append(el('pre', '', JSON.stringify(p.arguments, null, 1)));
    li.append(el('p', 'muted', 'session ' + p.session + ' · approval ' + p.id + ' · expires ' + p.expires));
    const row = el('div', 'row');
    const yes = el('button', '', 'Approve');
    yes.type = 'button';
    yes.setAttribute('aria-label', 'Approve ' + p.tool + ' (approval ' + p.id + ')');
    const reasonId = 'reason-' + p.id;
    const lab = el('label', '', 'Reason');
    lab.htmlFor = reasonId;
    const reason = el('input');
    reason.id = reasonId;
    reason.value = 'denied in the web UI';
    const no = el('button', 'danger', 'Deny');
    no.type = 'button';
    no.setAttribute('aria-label', 'Deny ' + p.tool + ' (approval ' + p.id + ')');
    if (role !== 'approver') {
      yes.disabled = true;
      no.disabled = true;
      reason.disabled = true;
    }
    yes.addEventListener('click', () => { yes.disabled = true; no.disabled = true; answer(p.id, true); });
    no.addEventListener('click', () => { yes.disabled = true; no.disabled = true; answer(p.id, false, reason.value); });
    row.append(yes, lab, reason, no);
    li.append(row);
    list.append(li);
  }
  const n = data.pending.length;
  $('approvals-empty').hidden = n > 0;
  const badge = $('approvals-badge');
  badge.hidden = n === 0;
  badge.textContent = String(n);
  badge.setAttribute('aria-label', n + ' waiting');
}

// ---- Audit ----------------------------------------------------------

function auditRow(e) {
  const tr = el('tr');
  tr.append(el('td', '', String(e.seq)));
  tr.append(el('td', '', e.ts));
  tr.append(el('td', 'mono', e.actor));
  tr.append(el('td', 'mono', e.kind));
  tr.append(el('td', 'details', short(e.data, 300)));
  return tr;
}

async function refreshAudit(fresh) {
  if (!token) return;
  try {
    const q = fresh || auditBefore === null ? '/api/audit?limit=50' : '/api/audit?limit=50&before=' + auditBefore;
    const page = await api(q);
    const rows = $('audit-rows');
    if (fresh) rows.textContent = '';
    const frag = document.createDocumentFragment();
    for (const e of page.entries) frag.append(auditRow(e));
    rows.prepend(frag);
    auditBefore = page.next_before;
    $('audit-older').disabled = auditBefore === null;
    if (fresh) {
      const v = await api('/api/audit/verify');
      const p = $('audit-verify');
      if (v.intact) {
        p.className = 'ok';
        p.textContent = 'Chain intact: ' + v.report.entries + ' entries verified.';
      } else {
        p.className = 'bad';
        const d = v.report.defect;
        p.textContent = 'Defect at seq ' + d.seq + ': ' + d.detail + ' (run pincer audit verify).';
      }
    }
  } catch (e) {
    $('audit-verify').textContent = 'Could not read the trail: ' + e.message;
  }
}

// ---- Memory ---------------------------------------------------------

async function searchMemory(ev) {
  ev.preventDefault();
  const q = $('memory-q').value.trim();
  if (!q) { $('memory-q').focus(); return; }
  const status = $('memory-status');
  const hits = $('memory-hits');
  hits.textContent = '';
  try {
    const r = await api('/api/memory/search?q=' + encodeURIComponent(q));
    status.textContent = r.hits.length + ' page(s) found; ' + r.examined + ' examined (' + r.backend + ').';
    for (const h of r.hits) {
      const li = el('li');
      li.append(el('strong', '', h.title + (h.pinned ? ' (pinned)' : '')));
      li.append(el('p', 'muted', h.id));
      li.append(el('p', '', h.snippet));
      hits.append(li);
    }
  } catch (e) {
    status.textContent = 'Search failed: ' + e.message;
  }
}

// ---- Hardware -------------------------------------------------------

function facts(dl, pairs) {
  dl.textContent = '';
  for (const [k, v] of pairs) {
    dl.append(el('dt', '', k));
    dl.append(el('dd', '', v === null || v === undefined ? '—' : String(v)));
  }
}

async function hwInfo() {
  try {
    const i = await api('/api/hardware');
    facts($('hw-board'), [
      ['Board', i.board.name],
      ['Backend', i.backend],
      ['I2C', i.i2c_default],
      ['SPI', i.spi_default],
      ['GPIO pins', i.pins.gpio.length],
      ['Note', i.warning],
    ]);
    $('hw-status').textContent = 'Board read (recorded in the trail).';
    refreshAudit(true);
  } catch (e) {
    $('hw-status').textContent = 'Could not read the board: ' + e.message;
  }
}

async function hwGpio() {
  try {
    const g = await api('/api/hardware/gpio');
    const rows = $('hw-rows');
    rows.textContent = '';
    for (const p of g.pins) {
      const tr = el('tr');
      tr.append(el('td', '', String(p.pin)));
      tr.append(el('td', 'mono', p.name));
      tr.append(el('td', p.error ? 'bad' : '', p.error ? p.error : (p.level ? 'high (1)' : 'low (0)')));
      rows.append(tr);
    }
    $('hw-pins').hidden = false;
    $('hw-status').textContent = g.pins.length + ' pins read on ' + g.board + ' (recorded in the trail).';
    refreshAudit(true);
  } catch (e) {
    $('hw-status').textContent = 'Could not read the pins: ' + e.message;
  }
}

// ---- Status ---------------------------------------------------------

async function refreshStatus() {
  try {
    const s = await api('/api/status');
    const part = (p, f) => (p && p.error ? 'error: ' + p.error : f(p));
    facts($('status-facts'), [
      ['Overall', s.ok ? 'ok' : 'errors below'],
      ['Version', s.version],
      ['Provider', part(s.agent_provider, (p) => p.how)],
      ['Autonomy', s.policy.autonomy],
      ['Sessions', part(s.sessions, (n) => n)],
      ['Approvals waiting (queue)', part(s.approvals_waiting, (n) => n)],
      ['Audit trail', part(s.audit, (a) => (a.intact ? 'intact, ' : 'DAMAGED, ') + a.entries + ' entries')],
      ['Memory', part(s.memory, (m) => m.pages + ' pages (' + m.search + ')')],
      ['Hardware', part(s.hardware, (h) => h.board)],
    ]);
    const ul = $('status-problems');
    ul.textContent = '';
    for (const e of s.errors) ul.append(el('li', 'bad', 'error: ' + e));
    for (const w of s.warnings) ul.append(el('li', '', 'warning: ' + w));
  } catch (e) {
    facts($('status-facts'), [['Status', 'unavailable: ' + e.message]]);
  }
}

// ---- Start ----------------------------------------------------------

document.addEventListener('DOMContentLoaded', () => {
  $('pair-form').addEventListener('submit', pair);
  $('forget').addEventListener('click', () => forget('Forgotten. This browser holds no token now.'));
  $('chat-form').addEventListener('submit', send);
  $('message').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) send(ev);
  });
  $('cancel').addEventListener('click', cancel);
  $('audit-refresh').addEventListener('click', () => refreshAudit(true));
  $('audit-older').addEventListener('click', () => refreshAudit(false));
  $('memory-form').addEventListener('submit', searchMemory);
  $('hw-info').addEventListener('click', hwInfo);
  $('hw-gpio').addEventListener('click', hwGpio);
  $('status-refresh').addEventListener('click', refreshStatus);
  if (token) start().catch(() => forget('Pair this browser.'));
  else $('code').focus();
});
