// UI test of hub's VS Code extension: a real `hub serve`, a real exec job, the
// real extension in a real code-server, driven through a real Chromium.
// See README.md next to this file. `node run.mjs --harness-only` checks the
// setup alone (daemon, code-server, browser, workbench) without the extension.
import path from 'node:path';
import { Harness, StepError, Themes, here, poll } from './harness.mjs';

const TASK = 'Write the greeting';
const QUESTION = 'Which greeting should I use?';
const ANSWER = 'Howdy from the hub UI test';
// The worker: reports progress, writes a file, then asks and appends the answer.
const WORKER = `hub progress "writing greeting"; printf 'hello from hub\\n' > hello.txt; sleep 20; ans=$(hub ask "${QUESTION}"); printf '%s\\n' "$ans" >> hello.txt`;
// The job's check, run by hub on the job's commit.
const VERIFY = 'grep -q "hello from hub" hello.txt';
// A job that runs until it is stopped.
const STOPPED = 'Stop me';
const STOPPED_WORKER = 'hub progress "waiting to be stopped"; sleep 120';
// A job whose check fails.
const FAILED = 'Fail the check';
// A job that writes the failed job's file differently: the two are forecast to conflict.
const CLASH = 'Clash with it';

const harnessOnly = process.argv.includes('--harness-only');
// Every theme runs the whole scenario in a fresh setup (HUB_UI_THEMES=dark: one).
const themes = (process.env.HUB_UI_THEMES || 'light,dark').split(',').map((t) => t.trim()).filter(Boolean);
const outRoot = path.resolve(process.env.HUB_UI_OUT || path.join(here, 'out'));
let h = null;

for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
	process.on(sig, async () => {
		process.stderr.write(`ui: ${sig}: cleaning up\n`);
		if (h) {
			await h.cleanup({ keepTmp: true }).catch(() => {});
			if (h.tmp) process.stderr.write(`ui: scratch dir kept: ${h.tmp}\n`);
		}
		process.exit(130);
	});
}
process.on('exit', () => h?.killNow());

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
async function waitJobIn(group, timeoutMs, { desc, count, task = TASK } = {}) {
	let rows = [];
	const what = `the job "${task}" under "${group}"${count ? ` (${count})` : ''}${desc ? ` with a description matching ${desc}` : ''} in the Hub view`;
	await poll(what, timeoutMs, async () => {
		rows = await treeRows();
		if (groupOf(rows, task) !== group) return false;
		if (count && rows.find((r) => r.level === 1 && r.label === group)?.desc !== count) return false;
		if (desc && !desc.test(rows.find((r) => r.level === 2 && r.label === task)?.desc || '')) return false;
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

async function expandJob(task = TASK) {
	const row = rowLocator(task, 2);
	await row.waitFor({ timeout: 10_000 });
	if ((await row.getAttribute('aria-expanded')) !== 'true') {
		await row.locator('.monaco-tl-twistie').click();
		await poll('the job node to expand', 10_000, async () => (await row.getAttribute('aria-expanded')) === 'true');
	}
}

async function childrenOfJob(task = TASK) {
	const rows = await treeRows();
	const i = rows.findIndex((r) => r.level === 2 && r.label === task);
	const out = [];
	for (let j = i + 1; i >= 0 && j < rows.length && rows[j].level > 2; j++) out.push(rows[j]);
	return out;
}

async function waitChild(pred, what, timeoutMs, task = TASK) {
	let kids = [];
	await poll(what, timeoutMs, async () => {
		kids = await childrenOfJob(task);
		return kids.find(pred);
	}).catch((e) => {
		throw new StepError(`${e.message}; the job's children are:\n${describeRows(kids)}`);
	});
	return kids.find(pred);
}

function toast(text) {
	return page().locator('.notifications-toasts .notification-toast', { hasText: text }).first();
}


// inlineAction hovers a job's row and returns its inline action with this
// title (the command's title is the action's aria-label).
async function inlineAction(task, title) {
	const titles = await inlineTitles(task);
	if (!titles.includes(title)) throw new StepError(`hovering "${task}" shows no inline action "${title}"; it shows [${titles.join(', ')}]`);
	return rowLocator(task, 2).locator(`.actions .action-label[aria-label="${title}"]`);
}

// Under load a hover can come before the row is drawn: it hovers again until
// the actions show (every job state has at least one), for up to 15 s.
async function inlineTitles(task) {
	const row = rowLocator(task, 2);
	let titles = [];
	await poll(`the inline actions of "${task}" on hover`, 15_000, async () => {
		await moveAway();
		await row.hover();
		await row.locator('.actions .action-label').first().waitFor({ state: 'visible', timeout: 2_000 }).catch(() => {});
		titles = await row.locator('.actions .action-label').evaluateAll((els) => els.filter((e) => e.offsetParent !== null).map((e) => e.getAttribute('aria-label')));
		return titles.length > 0;
	});
	return titles;
}

// The details view is a webview: its page sits in an iframe inside an iframe.
function detailsFrame() {
	return page().frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
}

// waitDetails waits until the details page's text matches every pattern.
async function waitDetails(what, patterns, timeoutMs = 15_000) {
	let text = '';
	await poll(`the details view to show ${what}`, timeoutMs, async () => {
		text = await detailsFrame().locator('body').innerText({ timeout: 2_000 });
		return patterns.every((p) => p.test(text));
	}).catch((e) => {
		const missing = patterns.filter((p) => !p.test(text)).join(', ');
		throw new StepError(`${e.message}; missing ${missing} in:\n${text || '(no details page)'}`);
	});
	return text;
}

// openDetails clicks a job's label: the row's command opens its details.
// A running job's row is redrawn every second (its elapsed time): a click that
// lands during a redraw can be lost, so it clicks again (each try logged).
async function openDetails(task, id) {
	const tab = page().locator('.tabs-container .tab.active', { hasText: `Hub: ${id}` }).first();
	for (let i = 1; ; i++) {
		await rowLocator(task, 2).locator('.label-name').click();
		try {
			await tab.waitFor({ timeout: 5_000 });
			return;
		} catch {
			if (i === 3) throw new StepError(`clicking "${task}" (3 times) brought up no tab "Hub: ${id}"`);
			process.stderr.write(`ui: clicking "${task}" brought up no details tab in 5 s; clicking again\n`);
		}
	}
}

// frameText finds the webview page (any frame) whose text matches marker and returns its text, or "".
async function frameText(marker) {
	for (const f of page().frames()) {
		const t = await f.locator('body').innerText({ timeout: 1_000 }).catch(() => '');
		if (marker.test(t)) return t;
	}
	return '';
}

// transient finds the status bar's transient message (not the hub item).
function statusMessage(text) {
	return page().locator('.part.statusbar .statusbar-item', { hasText: text }).first();
}

// moveAway parks the mouse where it hovers nothing (no row actions, no hover cards).
async function moveAway() {
	await page().mouse.move(900, 600);
}

// --- the run ------------------------------------------------------------------

async function scenario(theme) {
	await h.step('setup', () => h.setup());
	await h.step('daemon', () => h.startDaemon());
	if (!harnessOnly) await h.step('install-extension', () => h.installExtension());
	await h.step('code-server', () => h.startCodeServer());
	await h.step('browser', () => h.openBrowser());
	await h.step('workbench', () => h.openWorkbench());
	await h.step('theme', async () => {
		const want = Themes[theme].bodyClass;
		await poll(`the workbench in the ${theme} theme (class "${want}")`, 20_000, () =>
			page().evaluate((c) => document.querySelector('.monaco-workbench')?.classList.contains(c), want));
	});
	if (harnessOnly) {
		await h.step('screenshot', () => h.screenshot('00-workbench.png'));
		return;
	}

	let id = '';
	// The details' headline: the state (and verify) word, then the job's id.
	const headline = (words) => new RegExp(`^${words} job ${id}$`, 'm');
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
		id = h.hub('start', '--repo', h.repo, '--task', TASK, '--engine', 'exec', '--exec', WORKER, '--verify', VERIFY);
		if (!/^[\w-]+$/.test(id)) throw new StepError(`hub start printed "${id}", not a job id`);
		process.stderr.write(`ui: job ${id}\n`);
		// <engine> · <elapsed> · $<cost or ?> · <progress> · <branch>
		await waitJobIn('Running', 15_000, { count: '1', desc: new RegExp(`^exec · (\\d+s|\\d+m \\d\\ds) · \\$0\\.00 · writing greeting · hub/${id}$`) });
		await waitStatus('hub: 1 running · 0 needs input · $0.00', 10_000);
		// A click on the job opens its details, which follow it from here on.
		await openDetails(TASK, id);
		await waitDetails('the running job', [new RegExp(`^${TASK}$`, 'm'), headline('running'), new RegExp(`hub/${id}`), /Questions \(0\)/]);
		// Hovering a running job offers Stop inline, not Merge.
		const titles = await inlineTitles(TASK);
		if (!titles.includes('Hub: Stop Job') || titles.includes('Hub: Merge Into Current Branch') || titles.includes('Hub: Land Job')) throw new StepError(`a running job's inline actions are [${titles.join(', ')}]`);
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
		// The details followed the job: its question, waiting.
		await waitDetails('the question, waiting', [headline('needs input'), /^Answer Stop Log$/m, /Questions \(1\)/, new RegExp(QUESTION.replace(/\?/g, '\\?')), /waiting for an answer/]);
		const titles = await inlineTitles(TASK);
		if (!titles.includes('Hub: Answer Question') || !titles.includes('Hub: Stop Job')) throw new StepError(`a job that needs input shows the inline actions [${titles.join(', ')}]`);
		await h.screenshot('02-question.png');
	});

	await h.step('c-answered', async () => {
		const t = toast(notice);
		// The light run answers through the notification, the dark one through
		// the row's inline Answer (HUB_UI_ANSWER_VIA=question: the question node).
		const via = process.env.HUB_UI_ANSWER_VIA || (theme === 'dark' ? 'inline' : 'notification');
		if (via === 'inline') {
			await (await inlineAction(TASK, 'Hub: Answer Question')).click();
		} else if (via === 'notification' && (await t.isVisible())) {
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
		await moveAway();
		// The row now reads its ending and verify's word, not "writing greeting".
		await waitJobIn('Succeeded', 30_000, { count: '1', desc: new RegExp(`^succeeded · verified · exec · \\d+s · \\$0\\.00 · hub/${id}$`) });
		await waitStatus('hub: 0 running · 0 needs input · $0.00', 10_000);
		await statusMessage(`Hub: answer sent to job ${id}`).waitFor({ timeout: 5_000 }).catch(() => {
			throw new StepError(`no status-bar message "Hub: answer sent to job ${id}"`);
		});
		await waitDetails('the ended job', [headline('succeeded · verified'), /answered at \d\d:\d\d:\d\d UTC/, /Verify/, /passed \(exit 0\)/]);
		await h.screenshot('03-answered.png');
		const status = h.hub('status', id);
		if (!/succeeded/.test(status)) throw new StepError(`hub status ${id}: ${status}`);
		const content = h.git('show', `hub/${id}:hello.txt`);
		if (!content.includes(ANSWER)) throw new StepError(`hub/${id}:hello.txt does not hold the answer:\n${content}`);
	});

	await h.step('d-message-cleared', async () => {
		// "answer sent" is transient: it leaves the status bar by itself.
		await statusMessage(`Hub: answer sent to job ${id}`).waitFor({ state: 'hidden', timeout: 15_000 }).catch(() => {
			throw new StepError('"Hub: answer sent" is still in the status bar 15 s later');
		});
		await h.screenshot('04-message-cleared.png');
	});

	await h.step('e-diff', async () => {
		await expandJob();
		const file = await waitChild((r) => r.label === 'hello.txt', 'the changed file "hello.txt" under the job', 15_000);
		// base "hello" → head "hello from hub" + the answer: two lines added, one deleted.
		if (file.desc !== '+2 −1') throw new StepError(`hello.txt's description is "${file.desc}", not "+2 −1"`);
		await waitChild((r) => /^Commits \(\d+\)$/.test(r.label), 'the child "Commits (n)" under the job', 5_000);
		await waitChild((r) => r.label === 'Verify: passed (exit 0)', 'the child "Verify: passed (exit 0)" under the job', 5_000);
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
		await h.screenshot('05-diff.png');
	});

	await h.step('f-details', async () => {
		// Back to the details: every part of an ended job.
		await openDetails(TASK, id);
		await moveAway();
		await waitDetails('every part of the ended job', [
			new RegExp(`^${TASK}$`, 'm'), headline('succeeded · verified'),
			/^Summary$/m, /^Job$/m, new RegExp(`branch\\s+hub/${id}`), /^Files \(1\)$/m, /hello\.txt\s+modified\s+\+2 −1/,
			/^Verify$/m, /passed \(exit 0\)/, new RegExp(`command\\s+${VERIFY.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
			/^Cost$/m, /reserved\s+\$\d+\.\d\d/, /^Timings$/m, /total\s+\d/, /of which waiting for answers/,
			/^Questions \(1\)$/m, /answered at/,
			/^Trace \(7 steps\)$/m, /phase\s+run\s+\+\d/, /phase\s+verify\s+\+\d.*exit 0/, /running \S+, phases cover \S+ \(gap \S+\)/,
		]);
		await h.screenshot('06-details.png');
		// The picture in the extension's README: the editor area with the details.
		await h.screenshotOf(page().locator('.part.editor'), `details-${theme}.png`);
		// The page's links run commands: a file opens its diff.
		await detailsFrame().locator('#files a', { hasText: 'hello.txt' }).click();
		const diffTab = `hello.txt (${id}: base ↔ head)`;
		await page().locator('.tabs-container .tab.active', { hasText: diffTab }).first().waitFor({ timeout: 10_000 }).catch(() => {
			throw new StepError(`clicking hello.txt in the details did not bring up the diff "${diffTab}"`);
		});
		await openDetails(TASK, id);
		await waitDetails('the details again', [headline('succeeded · verified')]);
	});

	await h.step('g-tooltip', async () => {
		await moveAway(); // a hover card comes on the mouse entering the row
		await rowLocator(TASK, 2).locator('.label-name').hover();
		const hover = page().locator('.monaco-hover, .workbench-hover').filter({ hasText: `job ${id} · succeeded · verified` }).first();
		await hover.waitFor({ timeout: 10_000 }).catch(() => {
			throw new StepError(`hovering the job shows no tooltip "job ${id} · succeeded · verified"`);
		});
		const tip = await hover.innerText();
		if (!tip.includes(`branch: hub/${id}`)) throw new StepError(`the job's tooltip lacks its branch:\n${tip}`);
		await h.screenshot('07-tooltip.png');
		await moveAway();
	});

	await h.step('h-land-inline', async () => {
		// The daemon lands jobs: Land is the inline action, Merge only in the context menu.
		const titles = await inlineTitles(TASK);
		if (!titles.includes('Hub: Land Job') || !titles.includes('Hub: Clean Up Job') || titles.includes('Hub: Stop Job') || titles.includes('Hub: Merge Into Current Branch')) {
			throw new StepError(`a succeeded job's inline actions are [${titles.join(', ')}]`);
		}
		await (await inlineAction(TASK, 'Hub: Land Job')).click();
		// The result's line, as a transient status-bar message.
		const landed = /^Hub: 1 landed; main [0-9a-f]{7,} → [0-9a-f]{7,}, checkout updated$/;
		await statusMessage('Hub: 1 landed').waitFor({ timeout: 20_000 }).catch(() => {
			throw new StepError('no status-bar message "Hub: 1 landed; main … → …"');
		});
		const said = ((await statusMessage('Hub: 1 landed').textContent().catch(() => '')) || '').replace(/\s+/g, ' ').trim();
		if (!landed.test(said)) throw new StepError(`the status bar says "${said}"`);
		await moveAway();
		await waitJobIn('Succeeded', 15_000, { count: '1', desc: new RegExp(`^succeeded · verified · landed on main · exec · \\d+s · \\$0\\.00 · hub/${id}$`) });
		const main = h.git('show', 'main:hello.txt');
		if (!main.includes(ANSWER)) throw new StepError(`main's hello.txt lacks the job's change after landing:\n${main}`);
		// The details show the landing record; a landed job offers neither Land nor Merge.
		await waitDetails('the landing', [/^Landing$/m, /landed on main/, /into\s+main/, /^Clean up All changes Log$/m]);
		const after = await inlineTitles(TASK);
		if (after.includes('Hub: Land Job') || after.includes('Hub: Merge Into Current Branch') || !after.includes('Hub: Clean Up Job')) {
			throw new StepError(`a landed job's inline actions are [${after.join(', ')}]`);
		}
		await moveAway();
		await h.screenshot('08-landed.png');
	});

	await h.step('i-cleanup-inline', async () => {
		// The job's worktree is one of the repository's until it is cleaned up.
		const branchOf = () => h.git('worktree', 'list', '--porcelain').split('\n').filter((l) => l === `branch refs/heads/hub/${id}`);
		if (branchOf().length !== 1) throw new StepError(`git worktree list shows no worktree on hub/${id} before the clean-up`);
		await (await inlineAction(TASK, 'Hub: Clean Up Job')).click();
		await toast(`Hub: job ${id} cleaned up: worktree removed.`).waitFor({ timeout: 15_000 }).catch(() => {
			throw new StepError(`no notification "Hub: job ${id} cleaned up: worktree removed."`);
		});
		h.git('worktree', 'prune');
		if (branchOf().length !== 0) throw new StepError(`git worktree list still shows the worktree on hub/${id} after the clean-up`);
		await moveAway();
		await h.screenshot('09-cleaned-up.png');
	});

	let idF = '';
	await h.step('j-stop-inline', async () => {
		// A job whose verify fails reads so in its row.
		idF = h.hub('start', '--repo', h.repo, '--task', FAILED, '--engine', 'exec', '--exec', 'hub progress "writing x"; echo x > x.txt', '--verify', 'exit 1');
		await waitJobIn('Failed', 20_000, { task: FAILED, count: '1', desc: new RegExp(`^failed · verify failed \\(exit 1\\) · exec · \\d+s · \\$0\\.00 · hub/${idF}$`) });
		const id2 = h.hub('start', '--repo', h.repo, '--task', STOPPED, '--engine', 'exec', '--exec', STOPPED_WORKER);
		await waitJobIn('Running', 15_000, { task: STOPPED, desc: /· waiting to be stopped · hub\/\w+$/ });
		await (await inlineAction(STOPPED, 'Hub: Stop Job')).click();
		await moveAway();
		await waitJobIn('Cancelled', 20_000, { task: STOPPED, count: '1', desc: new RegExp(`^cancelled · exec · \\d+s · \\$0\\.00 · hub/${id2}$`) });
		const status = h.hub('status', id2);
		if (!/cancelled/.test(status)) throw new StepError(`hub status ${id2}: ${status}`);
		await h.screenshot('10-stopped.png');
	});

	await h.step('j2-conflict', async () => {
		// Two ended jobs write x.txt differently: hub forecasts the conflict and the tree shows it.
		const idC = h.hub('start', '--repo', h.repo, '--task', CLASH, '--engine', 'exec', '--exec', 'echo y > x.txt', '--verify', 'exit 1');
		const line = `conflicts with hub/${idC} in x.txt`;
		await waitJobIn('Failed', 30_000, { task: FAILED, count: '2', desc: new RegExp(`^failed · verify failed \\(exit 1\\) · ${line.replace(/\./g, '\\.')} · exec · `) });
		await expandJob(FAILED);
		await waitChild((r) => r.label === line, `the child "${line}"`, 10_000, FAILED);
		// Landing it runs its check on the integrated commit: red, and the error says why.
		const tip = h.git('rev-parse', 'main').trim();
		await (await inlineAction(FAILED, 'Hub: Land Job')).click();
		const red = toast(`did not land on main`);
		await red.waitFor({ timeout: 30_000 }).catch(() => {
			throw new StepError(`no error notification "Hub: job … did not land on main" after landing "${FAILED}"`);
		});
		const said = await red.innerText();
		if (!/Hub: job \w+ did not land on main: .*integrated commit/.test(said) || !/Nothing moved/.test(said)) throw new StepError(`the error says: ${said}`);
		if (!said.includes(idF)) throw new StepError(`the error does not name job ${idF}: ${said}`);
		if (h.git('rev-parse', 'main').trim() !== tip) throw new StepError('main moved although the check was red');
		await moveAway();
		// The review packet, from the view's title bar: both failed jobs, each with its conflict.
		await page().locator('.part.sidebar .title-actions .action-label[aria-label="Hub: Review Ended Jobs"], .part.sidebar .actions-container .action-label[aria-label="Hub: Review Ended Jobs"]').first().click({ timeout: 10_000 }).catch(() => {
			throw new StepError('no "Hub: Review Ended Jobs" action on the Hub view\'s title bar');
		});
		let text = '';
		await poll('the review page', 15_000, async () => /Review: ended jobs/.test(text = await frameText(/Review: ended jobs/))).catch((e) => {
			throw new StepError(`${e.message}; no frame shows it`);
		});
		await poll('the review page to list both jobs with their conflict', 15_000, async () => {
			text = await frameText(/Review: ended jobs/);
			return text.includes(CLASH) && text.includes(FAILED) && text.includes(line);
		}).catch((e) => {
			throw new StepError(`${e.message}; it shows:\n${text}`);
		});
		await h.screenshot('11-conflict.png');
		// Closed again: the details stay the only webview for the steps after.
		await page().locator('.tabs-container .tab', { hasText: 'Hub: Review' }).first().locator('.tab-actions .action-label').click({ force: true });
		await page().locator('.tabs-container .tab', { hasText: 'Hub: Review' }).first().waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => {
			throw new StepError('the review tab did not close');
		});
	});

	// The daemon stops and a new one starts: the extension says it is
	// disconnected, keeps the jobs it knew, reconnects on its own, and shows
	// every job exactly once, the one started meanwhile included.
	const down = () => toast('hub is not running');
	await h.step('k-disconnected', async () => {
		h.hub('shutdown');
		await poll('the daemon to exit after hub shutdown', 10_000, () => h.daemon.exited);
		await waitStatus('hub: disconnected', 15_000);
		const kept = await treeRows();
		if (groupOf(kept, TASK) !== 'Succeeded') throw new StepError(`while disconnected the tree lost the job:\n${describeRows(kept)}`);
		// It tells the truth (any hub command starts hub; no "hub serve"), offers
		// Start Hub, and goes away by itself on reconnect.
		await down().waitFor({ timeout: 15_000 }).catch(() => {
			throw new StepError('no notification saying hub is not running');
		});
		const said = await down().innerText();
		if (!/Any hub command \(hub jobs, say\) starts it/.test(said) || /hub serve/.test(said)) throw new StepError(`the notification says: ${said}`);
		await down().locator('a', { hasText: 'Start Hub' }).waitFor({ timeout: 5_000 }).catch(() => {
			throw new StepError(`the notification offers no "Start Hub": ${said}`);
		});
		// The details keep what they last read, and say so.
		await waitDetails('what was last read, while disconnected', [/Disconnected: this is what was last read\./, headline('succeeded · verified'), /^Summary$/m, /^Files \(1\)$/m, /passed \(exit 0\)/]);
		await h.screenshot('12-disconnected.png');
	});

	await h.step('l-reconnect', async () => {
		await h.startDaemon();
		const second = 'Second job';
		const id3 = h.hub('start', '--repo', h.repo, '--task', second, '--engine', 'exec', '--exec', "printf 'two\\n' > two.txt");
		if (!/^[\w-]+$/.test(id3)) throw new StepError(`hub start printed "${id3}", not a job id`);
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
		await down().waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => {
			throw new StepError('the "hub is not running" notification outlived the reconnect');
		});
		await h.screenshot('13-reconnected.png');
	});

	// Stopped again, hub comes back through the notice's Start Hub: the
	// extension starts the daemon itself and reconnects.
	await h.step('m-start-hub', async () => {
		h.hub('shutdown');
		await poll('the daemon to exit after hub shutdown', 10_000, () => h.daemon.exited);
		await waitStatus('hub: disconnected', 15_000);
		await down().waitFor({ timeout: 15_000 }).catch(() => {
			throw new StepError('no notification saying hub is not running');
		});
		await down().locator('a', { hasText: 'Start Hub' }).click();
		await waitStatus('hub: 0 running · 0 needs input · $0.00', 20_000);
		await down().waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => {
			throw new StepError('the "hub is not running" notification outlived Start Hub');
		});
		// A daemon answers again, started by the extension: the CLI sees the jobs.
		const listed = h.hub('jobs');
		if (!listed.includes(id)) throw new StepError(`hub jobs after Start Hub does not list ${id}:\n${listed}`);
		const rows = await treeRows();
		if (groupOf(rows, TASK) !== 'Succeeded' || groupOf(rows, STOPPED) !== 'Cancelled') throw new StepError(`after Start Hub the tree shows:\n${describeRows(rows)}`);
		await h.screenshot('14-started.png');
	});
}

const started = Date.now();
for (const theme of themes) {
	h = new Harness({ theme, outDir: path.join(outRoot, theme) });
	process.stderr.write(`ui: === ${theme} theme ===\n`);
	await scenario(theme);
	await h.step('cleanup', async () => {
		await h.cleanup();
		const left = h.leftovers();
		if (left.length) throw new StepError(`still running after cleanup: ${left.join(', ')}`);
	});
	h.report();
	process.stderr.write(`ui: ${theme}: PASS — screenshots:\n${h.shots.map((s) => `  ${s}`).join('\n')}\n`);
}
process.stderr.write(`ui: PASS in ${((Date.now() - started) / 1000).toFixed(1)}s (${themes.join(', ')})\n`);
