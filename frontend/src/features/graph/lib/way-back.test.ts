import { describe, expect, it } from "vitest";
import { stepLeft } from "./way-back";

describe("stepLeft", () => {
  it("remembers the head a restore leaves", () => {
    expect(stepLeft({ restored: false, left: null, head: "T:5" }, "T:2")).toBe("T:5");
  });

  it("keeps the first restore's step through a second restore", () => {
    expect(stepLeft({ restored: true, left: "T:5", head: "T:2" }, "T:3")).toBe("T:5");
  });

  it("remembers nothing when the step restored is the one left, or there is none", () => {
    expect(stepLeft({ restored: false, left: null, head: "T:5" }, "T:5")).toBeNull();
    expect(stepLeft({ restored: true, left: null, head: "T:2" }, "T:3")).toBeNull();
    expect(stepLeft({ restored: false, left: null, head: null }, "T:3")).toBeNull();
  });
});
