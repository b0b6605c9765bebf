// UI test of hub's VS Code extension: a real `hub serve`, a real exec job, the
// real extension in a real code-server, driven through a real Chromium.
// See README.md next to this file. `node run.mjs --harness-only` checks the
// setup alone (daemon, code-server, browser, workbench) without the extension.
import fs from 'node:fs';
import path from 'node:path';
import { Harness, StepError, poll } from './harness.mjs';

const TASK = 'Write the greeting';
const QUESTION = 'Which greeting should I use?';
const ANSWER = 'Howdy from the hub UI test';
// The worker: reports progress, writes a file, then asks and appends the answer.
const WORKER = `hub progress "writing greeting"; printf 'hello from hub\\n' > hello.txt; sleep 8; ans=$(hub ask "${QUESTION}"); printf '%s\\n' "$ans" >> hello.txt`;

const h = new Harness();
const harnessOnly = process.argv.includes('--harness-only');

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
	process.on(sig, async () => {
		process.stderr.write(`ui: ${sig}: cleaning up\n`);
		await h.cleanup({ keepTmp: true }).catch(() => {});
		if (h.tmp) process.stderr.write(`ui: scratch dir kept: ${h.tmp}\n`);
		process.exit(130);
	});
}
process.on('exit', () => h.killNow());

// --- workbench helpers --------------------------------------------------------

const page = () => h.page;

// statusText is the hub status-bar item's text (codicons are not text), or "".
async function statusText() {
	return page().evaluate(() => {
		for (const el of document.querySelectorAll('.part.statusbar .statusbar-item')) {
			const t = (el.textContent || '').replace(/\s+/g, ' ').trim();
			if (t.startsWith('hub:')) return t;
		}
		return '';
	});
}

// statusIcons lists the codicon names in the hub status-bar item.
async function statusIcons() {
	return page().evaluate(() => {
		for (const el of document.querySelectorAll('.part.statusbar .statusbar-item')) {
			const t = (el.textContent || '').replace(/\s+/g, ' ').trim();
			if (t.startsWith('hub:')) return [...el.querySelectorAll('.codicon')].map((i) => [...i.classList].find((c) => c.startsWith('codicon-')) || '');
		}
		return [];
	});
}

// hubBadge is the number on the activity bar's Hub item ("" when none).
async function hubBadge() {
	return page().evaluate(() => {
		for (const item of document.querySelectorAll('.part.activitybar .action-item')) {
			const a = item.querySelector('[aria-label]');
			const label = a ? a.getAttribute('aria-label') : item.getAttribute('aria-label');
			if (!label || !/^Hub\b/.test(label)) continue;
			const b = item.querySelector('.badge .badge-content');
			return b && b.offsetParent !== null ? b.textContent.trim() : '';
		}
		return null;
	});
}

async function waitStatus(want, timeoutMs) {
	let last = '';
	await poll(`the status bar item to read "${want}"`, timeoutMs, async () => {
		last = await statusText();
		return last === want;
	}).catch((e) => {
		throw new StepError(`${e.message}; it reads "${last || '(no hub item)'}"`);
	});
}

// treeRows lists the Hub view's visible rows in order: {level, label, desc, expanded}.
async function treeRows() {
	return page().evaluate(() => {
		const pane = [...document.querySelectorAll('.part.sidebar .pane')].find((p) => {
			const title = p.querySelector('.pane-header .title');
			return title && title.textContent.trim().toLowerCase() === 'jobs';
		}) || document.querySelector('.part.sidebar');
		const rows = [...pane.querySelectorAll('.monaco-list-row[role="treeitem"]')];
		rows.sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index));
		return rows.map((r) => ({
			index: Number(r.dataset.index),
			level: Number(r.getAttribute('aria-level')),
			label: (r.querySelector('.label-name')?.textContent || '').trim(),
			desc: (r.querySelector('.label-description')?.textContent || '').trim(),
			expanded: r.getAttribute('aria-expanded'),
		}));
	});
}

function describeRows(rows) {
	return rows.map((r) => `${'  '.repeat(Math.max(0, r.level - 1))}${r.label}${r.desc ? `  [${r.desc}]` : ''}`).join('\n') || '(no rows)';
}

// groupOf returns the group label the row with this label sits under.
function groupOf(rows, label) {
	let group = null;
	for (const r of rows) {
		if (r.level === 1) group = r.label;
		else if (r.level === 2 && r.label === label) return group;
	}
	return null;
}

// waitJobIn waits until the job's row sits under the group, and (if given)
// its description matches desc and the group's description (the count) is count.
async function waitJobIn(group, timeoutMs, { desc, count } = {}) {
	let rows = [];
	const what = `the job "${TASK}" under "${group}"${count ? ` (${count})` : ''}${desc ? ` with a description matching ${desc}` : ''} in the Hub view`;
	await poll(what, timeoutMs, async () => {
		rows = await treeRows();
		if (groupOf(rows, TASK) !== group) return false;
		if (count && rows.find((r) => r.level === 1 && r.label === group)?.desc !== count) return false;
		if (desc && !desc.test(rows.find((r) => r.level === 2 && r.label === TASK)?.desc || '')) return false;
		return true;
	}).catch((e) => {
		throw new StepError(`${e.message}; the tree shows:\n${describeRows(rows)}`);
	});
	return rows;
}

// rowLocator finds the tree row with this label at this level (1 group, 2 job, 3 child).
function rowLocator(label, level) {
	return page().locator(`.part.sidebar .monaco-list-row[role="treeitem"][aria-level="${level}"]`).filter({
		has: page().locator('.label-name', { hasText: label }),
	}).first();
}

async function expandJob() {
	const row = rowLocator(TASK, 2);
	await row.waitFor({ timeout: 10_000 });
	if ((await row.getAttribute('aria-expanded')) !== 'true') {
		await row.locator('.monaco-tl-twistie').click();
		await poll('the job node to expand', 10_000, async () => (await row.getAttribute('aria-expanded')) === 'true');
	}
}

async function childrenOfJob() {
	const rows = await treeRows();
	const i = rows.findIndex((r) => r.level === 2 && r.label === TASK);
	const out = [];
	for (let j = i + 1; i >= 0 && j < rows.length && rows[j].level > 2; j++) out.push(rows[j]);
	return out;
}

async function waitChild(pred, what, timeoutMs) {
	let kids = [];
	await poll(what, timeoutMs, async () => {
		kids = await childrenOfJob();
		return kids.find(pred);
	}).catch((e) => {
		throw new StepError(`${e.message}; the job's children are:\n${describeRows(kids)}`);
	});
	return kids.find(pred);
}

function toast(text) {
	return page().locator('.notifications-toasts .notification-toast', { hasText: text }).first();
}

// --- the run ------------------------------------------------------------------

await h.step('setup', () => h.setup());
await h.step('daemon', () => h.startDaemon());
if (!harnessOnly) await h.step('install-extension', () => h.installExtension());
await h.step('code-server', () => h.startCodeServer());
await h.step('browser', () => h.openBrowser());
await h.step('workbench', () => h.openWorkbench());

if (harnessOnly) {
	await h.step('screenshot', () => h.screenshot('00-workbench.png'));
} else {
	let id = '';
	await h.step('extension-ready', async () => {
		// The extension activated, connected and asked hub/summary.
		await waitStatus('hub: 0 running · 0 needs input · $0.00', 60_000);
		const icons = await statusIcons();
		if (!icons.includes('codicon-pulse')) throw new StepError(`the hub status-bar item shows the icons [${icons.join(', ')}], not $(pulse)`);
		const hubItem = page().locator('.part.activitybar .action-item a[aria-label^="Hub"], .part.activitybar [role="tab"][aria-label^="Hub"]').first();
		await hubItem.waitFor({ timeout: 20_000 }).catch(() => {
			throw new StepError('no "Hub" item in the activity bar');
		});
		await hubItem.click();
		await h.widenSideBar(440);
		// One view in the container: the side bar's title reads "Hub: Jobs" (no pane header).
		await page().locator('.part.sidebar .composite.title', { hasText: /^\s*Hub/ }).first().waitFor({ timeout: 20_000 }).catch(() => {
			throw new StepError('clicking "Hub" in the activity bar did not open the Hub side bar');
		});
		// No jobs yet: the view may show its welcome content instead of the tree.
		await page().locator('.part.sidebar .pane-body').filter({ has: page().locator('.monaco-list, .welcome-view-content') }).first().waitFor({ timeout: 20_000 }).catch(() => {
			throw new StepError('the Hub side bar shows no "Jobs" view');
		});
	});

	await h.step('a-running', async () => {
		id = h.hub('start', '--repo', h.repo, '--task', TASK, '--engine', 'exec', '--exec', WORKER);
		if (!/^[\w-]+$/.test(id)) throw new StepError(`hub start printed "${id}", not a job id`);
		process.stderr.write(`ui: job ${id}\n`);
		// <engine> · <elapsed> · $<cost or ?> · <progress>
		await waitJobIn('Running', 15_000, { count: '1', desc: /^exec · (\d+s|\d+m \d\ds) · \$0\.00 · writing greeting$/ });
		await waitStatus('hub: 1 running · 0 needs input · $0.00', 10_000);
		await h.screenshot('01-running.png');
	});

	const notice = `Hub job ${id} asks: ${QUESTION}`;
	await h.step('b-question', async () => {
		await waitJobIn('Needs input', 30_000, { count: '1' });
		await expandJob();
		await waitChild((r) => r.label === `Question: ${QUESTION}`, `the child "Question: ${QUESTION}"`, 15_000);
		await toast(notice).waitFor({ timeout: 15_000 }).catch(() => {
			throw new StepError(`no notification "${notice}"`);
		});
		await waitStatus('hub: 0 running · 1 needs input · $0.00', 10_000);
		let badge;
		await poll('the badge "1" on the activity bar\'s Hub item', 10_000, async () => (badge = await hubBadge()) === '1').catch((e) => {
			throw new StepError(`${e.message}; it shows ${badge === null ? 'no Hub item' : `"${badge}"`}`);
		});
		await h.screenshot('02-question.png');
	});

	await h.step('c-answered', async () => {
		const t = toast(notice);
		// HUB_UI_ANSWER_VIA=question answers through the question node instead.
		if (process.env.HUB_UI_ANSWER_VIA !== 'question' && (await t.isVisible())) {
			await t.locator('.monaco-button', { hasText: /^Answer$/ }).first().click({ timeout: 10_000 }).catch(() => {
				throw new StepError(`the notification "${notice}" has no "Answer" button`);
			});
		} else {
			// The toast hid itself: the question node runs hub.answer too.
			process.stderr.write('ui: answering through the question node\n');
			await rowLocator(`Question: ${QUESTION}`, 3).click();
		}
		const box = page().locator('.quick-input-widget');
		const input = box.locator(`input[placeholder="Answer for job ${id}"]`);
		await input.waitFor({ timeout: 10_000 }).catch(() => {
			throw new StepError(`no input box with the placeholder "Answer for job ${id}"`);
		});
		const prompt = await box.locator('.quick-input-message').textContent().catch(() => '');
		if (!prompt.includes(QUESTION)) throw new StepError(`the input box's prompt is "${prompt}", not the question "${QUESTION}"`);
		await input.fill(ANSWER);
		await input.press('Enter');
		await input.waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => {
			throw new StepError('the input box stayed open after Enter');
		});
		await waitJobIn('Succeeded', 30_000, { count: '1' });
		await waitStatus('hub: 0 running · 0 needs input · $0.00', 10_000);
		await h.screenshot('03-answered.png');
		const status = h.hub('status', id);
		if (!/succeeded/.test(status)) throw new StepError(`hub status ${id}: ${status}`);
		const content = h.git('show', `hub/${id}:hello.txt`);
		if (!content.includes(ANSWER)) throw new StepError(`hub/${id}:hello.txt does not hold the answer:\n${content}`);
	});

	await h.step('d-diff', async () => {
		await expandJob();
		const file = await waitChild((r) => r.label === 'hello.txt', 'the changed file "hello.txt" under the job', 15_000);
		// base "hello" → head "hello from hub" + the answer: two lines added, one deleted.
		if (file.desc !== '+2 −1') throw new StepError(`hello.txt's description is "${file.desc}", not "+2 −1"`);
		await waitChild((r) => /^Commits \(\d+\)$/.test(r.label), 'the child "Commits (n)" under the job', 5_000);
		await rowLocator('hello.txt', 3).click();
		const diff = page().locator('.editor-instance .monaco-diff-editor').first();
		await diff.waitFor({ timeout: 15_000 }).catch(() => {
			throw new StepError('clicking hello.txt opened no diff editor');
		});
		// Both sides shown, side by side (not the inline view).
		for (const side of ['original', 'modified']) {
			await diff.locator(`.editor.${side}`).waitFor({ timeout: 10_000 });
			const box = await diff.locator(`.editor.${side}`).boundingBox();
			if (!box || box.width < 200) throw new StepError(`the diff editor's ${side} side is ${box ? `${Math.round(box.width)}px` : 'not'} wide: not side by side`);
		}
		const sideText = async (side) => (await diff.locator(`.editor.${side} .lines-content .view-lines:not(.line-delete)`).first().locator('.view-line').allTextContents()).join('\n').replace(/\u00a0/g, ' ');
		let modified = '';
		await poll(`the diff's modified side to show "${ANSWER}"`, 15_000, async () => (modified = await sideText('modified')).includes(ANSWER)).catch((e) => {
			throw new StepError(`${e.message}; it shows "${modified}"`);
		});
		let original = '';
		await poll('the diff\'s original side to show the base "hello"', 10_000, async () => /^hello$/m.test(original = await sideText('original'))).catch((e) => {
			throw new StepError(`${e.message}; it shows "${original}"`);
		});
		const title = `hello.txt (${id}: base ↔ head)`;
		await page().locator('.tabs-container .tab', { hasText: title }).first().waitFor({ timeout: 5_000 }).catch(() => {
			throw new StepError(`no editor tab titled "${title}"`);
		});
		await h.screenshot('04-diff.png');
	});

	await h.step('e-statusbar', async () => {
		await waitStatus('hub: 0 running · 0 needs input · $0.00', 10_000);
		await h.screenshot('05-statusbar.png');
	});

	// The daemon stops and a new one starts: the extension says it is
	// disconnected, keeps the jobs it knew, reconnects on its own, and shows
	// every job exactly once, the one started meanwhile included.
	await h.step('f-reconnect', async () => {
		h.hub('shutdown');
		await poll('the daemon to exit after hub shutdown', 10_000, () => h.daemon.exited);
		await waitStatus('hub: disconnected', 15_000);
		const kept = await treeRows();
		if (groupOf(kept, TASK) !== 'Succeeded') throw new StepError(`while disconnected the tree lost the job:\n${describeRows(kept)}`);
		// It says how to get hub back, and that message goes away by itself on reconnect.
		const down = toast('hub is not running');
		await down.waitFor({ timeout: 15_000 }).catch(() => {
			throw new StepError('no notification saying hub is not running');
		});
		await h.screenshot('06-disconnected.png');
		await h.startDaemon();
		const second = 'Second job';
		const id2 = h.hub('start', '--repo', h.repo, '--task', second, '--engine', 'exec', '--exec', "printf 'two\\n' > two.txt");
		if (!/^[\w-]+$/.test(id2)) throw new StepError(`hub start printed "${id2}", not a job id`);
		let rows = [];
		await poll('both jobs, once each, under "Succeeded" (2)', 30_000, async () => {
			rows = await treeRows();
			const jobs = rows.filter((r) => r.level === 2);
			return jobs.filter((r) => r.label === TASK).length === 1 && jobs.filter((r) => r.label === second).length === 1 &&
				groupOf(rows, TASK) === 'Succeeded' && groupOf(rows, second) === 'Succeeded' &&
				rows.find((r) => r.level === 1 && r.label === 'Succeeded')?.desc === '2';
		}).catch((e) => {
			throw new StepError(`${e.message}; the tree shows:\n${describeRows(rows)}`);
		});
		await waitStatus('hub: 0 running · 0 needs input · $0.00', 10_000);
		await down.waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => {
			throw new StepError('the "hub is not running" notification outlived the reconnect');
		});
		await h.screenshot('07-reconnected.png');
	});
}

await h.step('cleanup', async () => {
	await h.cleanup();
	const left = h.leftovers();
	if (left.length) throw new StepError(`still running after cleanup: ${left.join(', ')}`);
});
h.report();
const shots = fs.readdirSync(h.outDir).filter((f) => f.endsWith('.png')).map((f) => path.join(h.outDir, f));
process.stderr.write(`ui: PASS — screenshots:\n${shots.map((s) => `  ${s}`).join('\n')}\n`);
