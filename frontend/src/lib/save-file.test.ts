import { afterEach, describe, expect, it, vi } from "vitest";
import { saveFile, type DownloadDocument } from "./save-file";

describe("saveFile", () => {
  afterEach(() => vi.useRealTimers());

  it("downloads the blob under its name and frees it afterwards", () => {
    vi.useFakeTimers();
    const clicked: { href: string; download: string; attached: boolean }[] = [];
    const body: unknown[] = [];
    const a = {
      href: "",
      download: "",
      style: { display: "" },
      click: () => clicked.push({ href: a.href, download: a.download, attached: body.includes(a) }),
      remove: () => body.splice(body.indexOf(a), 1),
    };
    const doc = { createElement: () => a, body: { appendChild: (n: unknown) => body.push(n) } };
    const blob = new Blob(["# the path"]);
    saveFile(blob, "haico-path.md", doc as unknown as DownloadDocument);
    expect(clicked).toHaveLength(1);
    expect(clicked[0]?.download).toBe("haico-path.md");
    expect(clicked[0]?.href.startsWith("blob:")).toBe(true);
    expect(clicked[0]?.attached).toBe(true);
    expect(body).toEqual([]);
    const revoke = vi.spyOn(URL, "revokeObjectURL");
    vi.advanceTimersByTime(10_000);
    expect(revoke).toHaveBeenCalledWith(clicked[0]?.href);
  });
});
