"use client";
import { useComparePaths } from "@/features/whatif/hooks/use-whatif";
import { formatCost, formatCount, formatMs } from "@/features/ledger/lib/ledger";
import {
  changedSurfaces,
  inStepLabels,
  pairName,
  replyDiff,
  stepName,
  threadOf,
  type PathTotals,
} from "@/features/whatif/lib/whatif";
import { useStepNames } from "@/hooks/use-step-names";
import type { components } from "@/lib/api/schema";
import { messageOf } from "@/lib/api/client";

type Step = components["schemas"]["PathStep"];

export interface PathsCompareProps {
  thread: string;
  a: string;
  b: string;
  onClose: () => void;
}

function Usage({ step }: { step: Step }) {
  const p = step.provenance;
  return (
    <span className="muted small pc-usage">
      {formatCount(p.input_tokens)} in · {formatCount(p.output_tokens)} out · {formatMs(p.duration_ms)} ·{" "}
      {formatCost(p.cost_usd)} · {p.profile_name ?? p.profile_id ?? "—"}
    </span>
  );
}

function Total({ side, totals }: { side: string; totals: PathTotals }) {
  return (
    <div className="pc-total" data-testid="paths-total" data-side={side}>
      <strong>{totals.steps} steps</strong> · {formatCount(totals.input_tokens)} in ·{" "}
      {formatCount(totals.output_tokens)} out{totals.tokens_estimated ? " (estimated)" : ""} ·{" "}
      {formatMs(totals.duration_ms)} · {formatCost(totals.cost_usd)}
    </div>
  );
}

/** "Compare paths": the two lineages side by side from their shared step, one row per
 * step: the message, each reply (b's marked against a's), what differs in the
 * workspace after it, and tokens, duration and cost from the ledger; totals below.
 * Steps are named and numbered as the graph names them ("step 3 · 3.1"), paths by their
 * names, and an error in the same words. */
export function PathsCompare({ thread, a, b, onClose }: PathsCompareProps) {
  const q = useComparePaths(thread, a, b);
  const data = q.data;
  const { labels, branches } = useStepNames();
  const pathOf = (node: string) => {
    const name = branches.get(threadOf(node));
    return `step ${stepName(node, labels)}${name ? ` (${name === "main" ? "main path" : name})` : ""}`;
  };
  return (
    <div className="overlay" role="presentation">
      <div className="dialog paths-compare" role="dialog" aria-label="Compare paths" data-testid="paths-compare">
        <header className="pc-head">
          <h2>Compare paths</h2>
          <span className="muted small" data-testid="paths-fork">
            {data?.fork ? `from the shared step ${stepName(data.fork, labels)}` : "from the start"}
          </span>
          <span className="spacer" />
          <button type="button" data-testid="paths-close" onClick={onClose}>
            Close
          </button>
        </header>
        {q.isLoading && <p className="muted">Lining the two paths up…</p>}
        {q.error && (
          <p className="replay-refused" data-testid="paths-error" role="alert">
            {inStepLabels(messageOf(q.error), labels, branches)}
          </p>
        )}
        {data && (
          <>
            <div className="pc-lanes pc-titles">
              <div data-testid="paths-title" data-side="a">
                Path A · {pathOf(a)}
              </div>
              <div data-testid="paths-title" data-side="b">
                Path B · {pathOf(b)}
              </div>
            </div>
            <ol className="pc-pairs">
              {data.pairs.map((pair, i) => {
                const differs = changedSurfaces(pair.comparison);
                return (
                  <li key={i} className="pc-pair" data-testid="paths-pair" data-a={pair.a ?? ""} data-b={pair.b ?? ""}>
                    <p className="pc-message">
                      <span className="muted small" data-testid="paths-step">
                        {pairName(pair, labels)}
                      </span>{" "}
                      {pair.a_step?.user_message ?? pair.b_step?.user_message}
                    </p>
                    <div className="pc-lanes">
                      <div className="pc-side" data-side="a">
                        {pair.a_step ? (
                          <>
                            <p className="pc-reply">{pair.a_step.reply}</p>
                            <Usage step={pair.a_step} />
                          </>
                        ) : (
                          <p className="muted small">(no step)</p>
                        )}
                      </div>
                      <div className="pc-side" data-side="b">
                        {pair.b_step ? (
                          <>
                            <pre className="pc-reply pc-diff" data-testid="paths-reply-diff">
                              {(pair.a_step
                                ? replyDiff(pair.a_step.reply, pair.b_step.reply)
                                : [{ sign: "+" as const, text: pair.b_step.reply }]
                              ).map((line, k) => (
                                <div
                                  key={k}
                                  className={`diff-line diff-${line.sign === "+" ? "add" : line.sign === "-" ? "del" : "ctx"}`}
                                >
                                  {line.sign} {line.text}
                                </div>
                              ))}
                            </pre>
                            <Usage step={pair.b_step} />
                          </>
                        ) : (
                          <p className="muted small">(no step)</p>
                        )}
                      </div>
                    </div>
                    {pair.comparison && (
                      <p className="small pc-workspace" data-testid="paths-workspace">
                        Workspace after this step:{" "}
                        {differs.length === 0 ? "the same on both paths" : `differs in ${differs.join(", ")}`}
                      </p>
                    )}
                  </li>
                );
              })}
            </ol>
            <div className="pc-lanes">
              <Total side="a" totals={data.totals.a} />
              <Total side="b" totals={data.totals.b} />
            </div>
          </>
        )}
      </div>
    </div>
  );
}
