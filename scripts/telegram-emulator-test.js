// `pincer serve` against telegram-test-api, a third-party Bot API emulator
// from npm (run by scripts/telegram-emulator-test.sh): a person chats with
// pincer, approves a gated sensor read with the inline button, a cron job
// reports to the chat, and the daemon survives a restart. The emulator
// ignores `offset` and `timeout` (it hands each update out once), so the
// restart and edge-case properties are proven by the Rust tests' own
// server; this checks pincer against someone else's reading of the API.
//
// usage: node telegram-emulator-test.js PINCER_BINARY
'use strict';

const TelegramServer = require('telegram-test-api');
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const PINCER = process.argv[2];
const TOKEN = '4242:emulator-token';
const OWNER = 111;

const SCRIPT = {
  turns: [
    { text: 'Hello from pincer.', expect: { last_role: 'user', last_message_contains: 'hi pincer' } },
    {
      tool_calls: [{ id: 't', name: 'i2c_read', arguments: { address: '0x48', register: '0x00', length: 2 } }],
      expect: { last_role: 'user', last_message_contains: 'temperature' },
    },
    { text: 'The sensor reads 20 degrees.', expect: { last_role: 'tool' } },
    { text: 'Time to water the plants.', expect: { last_message_contains: 'water' } },
    { text: 'Time to water the plants.' },
    { text: 'Time to water the plants.' },
  ],
};
const SCRIPT_AFTER_RESTART = {
  turns: [{ text: 'Back again.', expect: { last_role: 'user', last_message_contains: 'are you back' } }],
};

function fail(why) {
  console.error(`telegram emulator test FAILED: ${why}`);
  process.exit(1);
}

async function waitFor(what, secs, probe) {
  const deadline = Date.now() + secs * 1000;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function pincer(home, args) {
  return execFileSync(PINCER, args, { env: env(home), encoding: 'utf8' });
}

function env(home) {
  const e = { ...process.env, PINCER_HOME: home, PINCER_BOARD: 'sim', TG_TOKEN: TOKEN };
  for (const k of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'PINCER_MODEL', 'PINCER_WORKSPACE']) delete e[k];
  return e;
}

function startDaemon(home) {
  const child = spawn(PINCER, ['serve'], { env: env(home), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    async stop() {
      child.kill('SIGTERM');
      const code = await exited;
      if (code !== 0) fail(`pincer serve exited ${code}: ${err}`);
      if (err.includes(TOKEN)) fail('the bot token is in pincer\'s output');
    },
  };
}

async function main() {
  if (!PINCER) fail('usage: node telegram-emulator-test.js PINCER_BINARY');
  const server = new TelegramServer({ port: 0, host: '127.0.0.1', storeTimeout: 600 });
  // Port 0 lets the OS choose; the emulator builds apiURL from the config,
  // so it is rebuilt from the address actually bound.
  await server.start();
  const port = server.server.address().port;
  server.config.apiURL = `http://127.0.0.1:${port}`;
  const client = server.getClient(TOKEN, { userId: OWNER, chatId: OWNER });
  // Every message the bot sent to the owner's chat, in order.
  const seen = [];
  // One call of the emulator's client route per look (its client class
  // would keep polling in the background after a timeout and could take a
  // message no one then reads).
  const refresh = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/getUpdates`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ token: TOKEN, chatId: OWNER }),
    });
    const got = await res.json();
    for (const u of got.result || []) seen.push(u.message);
  };
  const botSays = async (needle) => {
    await refresh();
    return seen.find((m) => typeof m.text === 'string' && m.text.includes(needle));
  };

  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-tg-emulator-'));
  fs.writeFileSync(path.join(home, 'script.json'), JSON.stringify(SCRIPT));
  fs.writeFileSync(path.join(home, 'config.toml'), [
    '[policy]', 'autonomy = "supervised"', 'approval_timeout_secs = 30', '',
    '[providers.s]', 'kind = "scripted"', 'script = "script.json"', '',
    '[channels.telegram]', 'token_env = "TG_TOKEN"', `api_base = "http://127.0.0.1:${port}"`,
    `allow_users = [${OWNER}]`, `approvers = [${OWNER}]`, 'poll_timeout_secs = 1', '',
  ].join('\n'));

  let daemon = startDaemon(home);
  await client.sendMessage(client.makeMessage('hi pincer'));
  await waitFor('the greeting', 30, () => botSays('Hello from pincer'));

  await client.sendMessage(client.makeMessage('what is the temperature?'));
  const ask = await waitFor('the approval buttons', 30, async () => {
    await refresh();
    return seen.find((m) => m.reply_markup && m.reply_markup.inline_keyboard);
  });
  const approve = ask.reply_markup.inline_keyboard[0][0].callback_data;
  if (!/^pa:[0-9a-f]+:y$/.test(approve)) fail(`unexpected button data ${approve}`);
  await client.sendCallback(client.makeCallbackQuery(approve));
  await waitFor('the sensor reply', 30, () => botSays('20 degrees'));

  pincer(home, ['cron', 'add', '--name', 'water', '--schedule', '* * * * * *',
    '--prompt', 'remind me to water', '--notify', `telegram:${OWNER}`]);
  await waitFor('the cron reply', 30, () => botSays('water the plants'));
  pincer(home, ['cron', 'remove', 'water']);

  await daemon.stop();
  fs.writeFileSync(path.join(home, 'script.json'), JSON.stringify(SCRIPT_AFTER_RESTART));
  daemon = startDaemon(home);
  await client.sendMessage(client.makeMessage('are you back?'));
  await waitFor('the answer after the restart', 30, () => botSays('Back again'));
  await daemon.stop();

  const verify = JSON.parse(pincer(home, ['audit', 'verify', '--json']));
  if (verify.defect) fail(`the audit trail does not verify: ${JSON.stringify(verify)}`);
  const trail = pincer(home, ['audit', 'log', '--limit', '5000', '--json'])
    .split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const answers = trail.filter((e) => e.kind === 'approval.answer');
  if (answers.length !== 1 || answers[0].actor !== `telegram:${OWNER}`) {
    fail(`expected one approval by telegram:${OWNER}: ${JSON.stringify(answers)}`);
  }
  if (!trail.some((e) => e.kind === 'cron.run' && e.data.job === 'water')) fail('no cron.run entry');
  const count = (needle) => seen.filter((m) => (m.text || '').includes(needle)).length;
  if (count('Hello from pincer') !== 1 || count('20 degrees') !== 1) {
    fail(`a message was answered twice: ${JSON.stringify(seen.map((m) => m.text))}`);
  }
  await server.stop();
  fs.rmSync(home, { recursive: true, force: true });
  console.log('telegram emulator: chat, approval by button, cron and a restart all passed');
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
