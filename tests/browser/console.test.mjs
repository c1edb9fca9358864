// The operator console in a real browser, run by
// tests/e2e/console_browser_test.cpp against a real `tidemark serve` and PostgreSQL:
// Debian's chromium, driven by playwright-core, in a 1280x900 window whose local time zone
// is not UTC. It enters the token, reads the numbers the page shows, checks that the runs
// table fits the window and the chart's time axis is in UTC, releases a quarantined record
// (after which its twin, conflicting with the stored row now, is offered no Release),
// retries a dead letter, and takes screenshots at 1280 and 390 px wide. With an empty
// TIDEMARK_API_TOKEN (serve needs none) it only opens the page and reads what it shows
// without pressing Connect. It prints one line `RESULT {…}` with what it read and did, for
// the gtest to compare with the database; any failure (an element missing, a script error,
// a Content-Security-Policy violation) exits 1 with the reason.
//
// Environment: TIDEMARK_UI_URL (http://127.0.0.1:PORT/ui/), TIDEMARK_API_TOKEN,
// TIDEMARK_SCREENSHOT_DIR, CHROMIUM (default /usr/bin/chromium). package.json pins
// playwright-core at 1.61.1, the newest that runs on Debian 12's Node.js 18 (docs/console.md).
import { chromium } from 'playwright-core';
import path from 'node:path';

const url = process.env.TIDEMARK_UI_URL;
const token = process.env.TIDEMARK_API_TOKEN;
const screenshots = process.env.TIDEMARK_SCREENSHOT_DIR;
if (!url || token === undefined || !screenshots) {
  console.error('console.test.mjs needs TIDEMARK_UI_URL, TIDEMARK_API_TOKEN and TIDEMARK_SCREENSHOT_DIR');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
const problems = [];
const result = { screenshots: [] };
try {
  // A zone far from UTC, so that a time shown in the browser's local time differs from UTC.
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    timezoneId: 'America/Los_Angeles',
  });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  page.on('pageerror', (error) => problems.push('page error: ' + error.message));
  // Until the token is entered, the page's first reads are refused (401) by a serve that
  // needs one: the browser logs those as errors, and they are expected.
  let asking = token !== '';
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    if (asking && message.text().includes('status of 401')) return;
    problems.push('console error: ' + message.text());
  });
  const loaded = () => page.waitForSelector('body[data-loaded="true"]');
  const shoot = async (name) => {
    const file = path.join(screenshots, name);
    await page.screenshot({ path: file, fullPage: true });
    result.screenshots.push(file);
  };
  const number = async (selector) => {
    const text = await page.locator(selector).innerText();
    const match = /\d+/.exec(text);
    if (!match) throw new Error(selector + ' shows no number: ' + JSON.stringify(text));
    return Number(match[0]);
  };

  await page.goto(url);
  if (token === '') {
    // Serve needs no token: the page loads everything on open, Connect never pressed.
    await loaded();
    result.open_status = await page.getByRole('status').innerText();
    result.open_pipeline_rows = await page.locator('#pipelines-table tbody tr').count();
    result.open_pipeline = await page.locator('#pipelines-table tbody tr td').first().innerText();
    result.open_quarantine = await number('#quarantine-count');
    await shoot('console-1280-open-without-token.png');
  } else {
    // Serve needs a token: the page asks for it, and shows no error for having tried without.
    await page.getByRole('status').filter({ hasText: 'Enter the API token' }).waitFor();
    await page.getByLabel('API token').fill(token);
    await page.getByLabel('API token').press('Enter');  // the keyboard submits the form
    await loaded();
    asking = false;  // with the token, a 401 is an error again
    result.cookies = (await context.cookies()).length;
    result.token_in_session_storage = await page.evaluate(() => Object.values(sessionStorage).includes(
      document.getElementById('token').value));

    // Pipelines: the pipeline's open quarantine and dead letters.
    const pipelineRow = page.locator('#pipelines-table tbody tr').first();
    result.pipeline = await pipelineRow.locator('td').nth(0).innerText();
    result.pipeline_open_quarantine = Number(await pipelineRow.locator('td').nth(6).innerText());
    result.pipeline_dead = Number(await pipelineRow.locator('td').nth(7).innerText());
    await shoot('console-1280-pipelines.png');

    // Runs: the newest run's outcome counts.
    await page.getByRole('link', { name: 'Runs' }).click();
    await page.locator('#runs-chart canvas').waitFor();
    result.chart_canvases = await page.locator('#runs-chart canvas').count();
    await shoot('console-1280-runs.png');
    // Every column of the runs table within the 1280 px window, none cut off or scrolled to.
    result.runs_table_fits = await page.evaluate(() => {
      const table = document.getElementById('runs-table');
      const last = table.tHead.rows[0].cells[table.tHead.rows[0].cells.length - 1];
      return table.parentElement.scrollWidth <= table.parentElement.clientWidth &&
        last.getBoundingClientRect().right <= window.innerWidth;
    });
    // The chart's time axis: each tick's label is its instant in UTC, 24-hour (the window's
    // zone is Los Angeles). `runsChart` is the page's chart (a global of its script).
    const ticks = await page.evaluate(() => ({ splits: runsChart.axes[0]._splits, values: runsChart.axes[0]._values }));
    result.chart_ticks = ticks.values;
    result.chart_ticks_utc = Array.isArray(ticks.values) && ticks.values.length > 0 &&
      ticks.values.every((label, i) =>
        new Date(ticks.splits[i] * 1000).toISOString().replace('T', ' ').includes(label));
    const runCells = page.locator('#runs-table tbody tr').first().locator('td');
    result.run_id = Number((await runCells.nth(0).innerText()).replace('#', ''));
    result.run_input = Number(await runCells.nth(7).innerText());
    result.run_inserted = Number(await runCells.nth(8).innerText());
    result.run_invalid = Number(await runCells.nth(14).innerText());
    result.run_conflict = Number(await runCells.nth(15).innerText());

    // Quarantine: the count, the first entry shown with what it conflicts with, released.
    await page.getByRole('link', { name: 'Quarantine' }).click();
    result.quarantine_open = await number('#quarantine-count');
    result.quarantine_rows = await page.locator('#quarantine-table tbody tr[data-entry]').count();
    const entryRow = page.locator('#quarantine-table tbody tr[data-entry]').first();
    result.released_entry = Number(await entryRow.getAttribute('data-entry'));
    await entryRow.getByRole('button', { name: 'Show' }).click();
    await page.locator('#entry-title').filter({ hasText: 'Entry ' + result.released_entry + ':' }).waitFor();
    result.shown_raw = await page.locator('#entry-raw').innerText();
    await shoot('console-1280-quarantine.png');
    const conflictRows = page.locator('#quarantine-table tbody tr[data-entry]').filter({ hasText: 'conflict' });
    result.conflict_releases_before = await conflictRows.getByRole('button', { name: 'Release' }).count();
    await entryRow.getByRole('button', { name: 'Release' }).click();
    await page.getByRole('status').filter({ hasText: 'Released entry ' + result.released_entry }).waitFor();
    result.release_message = await page.getByRole('status').innerText();
    result.quarantine_open_after = await number('#quarantine-count');
    // Its twin of the same key and revision now conflicts with the row the release stored:
    // no Release, and the reason where the button was.
    result.conflict_rows_after = await conflictRows.count();
    result.conflict_releases_after = await conflictRows.getByRole('button', { name: 'Release' }).count();
    result.conflict_note = await conflictRows.locator('.no-release').first().innerText();
    await shoot('console-1280-quarantine-after-release.png');

    // Dead letters: the count per destination, the first one retried.
    await page.getByRole('link', { name: 'Dead letters' }).click();
    result.dead = await number('#dead-count');
    result.dead_by_destination = {};
    for (const block of await page.locator('#dead-destinations .destination').all()) {
      result.dead_by_destination[await block.getAttribute('data-destination')] =
        await block.locator('tbody tr[data-event]').count();
    }
    result.last_error_shown = await page.locator('#dead-destinations .destination p').first().innerText();
    const eventRow = page.locator('#dead-destinations tbody tr[data-event]').first();
    result.retried_event = Number(await eventRow.getAttribute('data-event'));
    await eventRow.getByRole('button', { name: 'Retry' }).click();
    await page.getByRole('status').filter({ hasText: 'Event ' + result.retried_event }).waitFor();
    result.dead_after = await number('#dead-count');
    await shoot('console-1280-dead-letters.png');

    // Views, then the narrow layout.
    // From the keyboard: the section links are real links.
    await page.getByRole('link', { name: 'Views' }).press('Enter');
    await page.locator('#views').waitFor({ state: 'visible' });
    result.view_rows = await page.locator('#views-table tbody tr').count();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole('link', { name: 'Pipelines' }).click();
    result.narrow_overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    await shoot('console-390-pipelines.png');
    await page.getByRole('link', { name: 'Runs' }).click();
    await shoot('console-390-runs.png');
    result.narrow_overflow_runs = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    await page.getByRole('link', { name: 'Quarantine' }).click();
    await shoot('console-390-quarantine.png');
    await page.getByRole('link', { name: 'Dead letters' }).click();
    await shoot('console-390-dead-letters.png');
  }
} catch (error) {
  problems.push(error.stack || String(error));
} finally {
  await browser.close();
}
for (const file of result.screenshots) console.log('screenshot: ' + file);
console.log('RESULT ' + JSON.stringify(result));
if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
