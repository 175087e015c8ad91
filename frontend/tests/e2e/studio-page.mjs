// A page object for the studio: every step drives the binding data-testids.
import assert from "node:assert/strict";

const T = 20_000;

export class StudioPage {
  constructor(page) {
    this.page = page;
  }
  byTest(id) {
    return this.page.locator(`[data-testid="${id}"]`);
  }
  async newConversation() {
    const previous = new URL(this.page.url()).searchParams.get("thread");
    await this.byTest("new-conversation").click();
    await this.page.waitForURL(
      (u) => /^th_[0-9a-f]{32}$/.test(u.searchParams.get("thread") ?? "") && u.searchParams.get("thread") !== previous,
      {
        timeout: T,
      },
    );
    await this.byTest("message-input").waitFor({ timeout: T });
    // the new (empty) conversation is on screen, not the one before it
    await this.page.waitForFunction(
      () => document.querySelectorAll('[data-testid="chat-message"]').length === 0,
      null,
      { timeout: T },
    );
    return new URL(this.page.url()).searchParams.get("thread");
  }
  async send(text) {
    const before = await this.assistantMessages().count();
    await this.byTest("message-input").fill(text);
    await this.byTest("send-button").click();
    await this.waitIdle();
    await this.page.waitForFunction(
      (n) => document.querySelectorAll('[data-testid="chat-message"][data-role="assistant"]').length > n,
      before,
      { timeout: T },
    );
  }
  async waitIdle() {
    await this.byTest("turn-status").waitFor({ state: "hidden", timeout: T });
    assert.equal(await this.byTest("send-button").isVisible(), true);
  }
  /** Clicks `locator` once it has stayed in one place for a few hundred ms. Playwright
   * waits for two still animation frames; a card can still move after that, when the
   * family's graph or history that a path switch fetched lands a moment later (the page
   * shows the cached one first), and a click that lands as it moves hits the card now
   * under the pointer. */
  async clickSettled(locator) {
    const same = (a, b) => a && b && a.x === b.x && a.y === b.y && a.width === b.width && a.height === b.height;
    let last = null;
    let still = 0;
    for (const deadline = Date.now() + T; still < 3 && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 100));
      const box = await locator.boundingBox();
      still = same(box, last) ? still + 1 : 0;
      last = box;
    }
    await locator.click();
  }
  assistantMessages() {
    return this.page.locator('[data-testid="chat-message"][data-role="assistant"]');
  }
  node(id) {
    return this.page.locator(`[data-testid="graph-node"][data-node-id="${id}"]`);
  }
  /** Opens a step's details (the drawer): its card's details button; a click on the
   *  card only selects it. */
  async openDetails(id) {
    await this.node(id).locator('[data-testid="graph-node-details"]').click();
    await this.page.waitForSelector(`[data-testid="node-details"][data-node-id="${id}"]`, { timeout: T });
  }
  nodeByLabel(label) {
    return this.page.locator(`[data-testid="graph-node"][data-label="${label}"]`);
  }
  async objective() {
    return this.byTest("workspace-objective").inputValue();
  }
  async expectObjective(text) {
    await this.page.waitForFunction(
      (t) => document.querySelector('[data-testid="workspace-objective"]')?.value === t,
      text,
      { timeout: T },
    );
  }
  async expectCount(testId, n, scope = "") {
    await this.page.waitForFunction(
      ([id, count, extra]) => document.querySelectorAll(`[data-testid="${id}"]${extra}`).length === count,
      [testId, n, scope],
      { timeout: T },
    );
  }
  async headNodeId() {
    return this.page.locator('[data-testid="graph-node"][data-head="true"]').getAttribute("data-node-id");
  }
  async expectHead(nodeId) {
    await this.page.waitForSelector(`[data-testid="graph-node"][data-node-id="${nodeId}"][data-head="true"]`, {
      timeout: T,
    });
  }
  /** The card's place on the displayed path, once the graph has caught up with the head. */
  async expectActive(nodeId, active) {
    await this.page.waitForSelector(
      `[data-testid="graph-node"][data-node-id="${nodeId}"][data-active="${active ? "true" : "false"}"]`,
      { timeout: T },
    );
  }
  async stepLabels() {
    return this.page
      .locator('[data-testid="chat-message"][data-role="user"] [data-testid="step-label"]')
      .allInnerTexts();
  }
  /** Waits until the chat's user messages carry exactly these step labels (a path
   *  just opened renders its transcript a moment after the graph). */
  async expectStepLabels(labels) {
    const selector = '[data-testid="chat-message"][data-role="user"] [data-testid="step-label"]';
    try {
      await this.page.waitForFunction(
        ([sel, want]) =>
          JSON.stringify([...document.querySelectorAll(sel)].map((e) => e.innerText)) === JSON.stringify(want),
        [selector, labels],
        { timeout: T },
      );
    } catch (err) {
      throw new Error(
        `step labels ${JSON.stringify(await this.stepLabels())}, expected ${JSON.stringify(labels)}: ${err}`,
      );
    }
  }
  async openFromHistory(threadId, shot = null) {
    await this.byTest("history-menu-button").click();
    const item = this.page.locator(`[data-testid="conversation-item"][data-thread-id="${threadId}"]`);
    await item.waitFor({ timeout: T });
    if (shot) await shot();
    const text = await item.innerText();
    await item.click();
    return text;
  }
}
