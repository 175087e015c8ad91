"use client";
import { useMemo, useState } from "react";
import { useAgreement } from "@/features/coding/hooks/use-coding-data";
import type { CodingView } from "@/features/coding/hooks/use-coding";
import { disagreements, showStatistic, type Statistic } from "@/features/coding/lib/agreement";
import { codersOf } from "@/features/coding/lib/codings";
import { messageOf } from "@/lib/api/client";

const COLUMNS: readonly { key: Statistic; head: string; title: string }[] = [
  {
    key: "percent_agreement",
    head: "Agree",
    title: "Percent agreement: the share of units where the coders agree",
  },
  { key: "cohen_kappa", head: "Cohen κ", title: "Cohen's kappa: agreement beyond chance, two coders" },
  {
    key: "krippendorff_alpha",
    head: "Kripp. α",
    title: "Krippendorff's alpha (nominal), any number of coders",
  },
];

function Figure({ value, kind, coders }: { value: number | null | undefined; kind: Statistic; coders: number }) {
  const shown = showStatistic(value, kind, coders);
  return (
    <td data-statistic={kind} title={shown.why}>
      {shown.why ? (
        <span className="missing" tabIndex={0} aria-label={`— (${shown.why})`}>
          {shown.text}
        </span>
      ) : (
        shown.text
      )}
    </td>
  );
}

/** The agreement among the family's coders (per code and overall), and under it the
 * disagreements, each a link to its step so the coders can talk it through. */
export function AgreementView({
  thread,
  view,
  label,
  onShowStep,
}: {
  thread: string;
  view: CodingView;
  label: (nodeId: string) => string;
  onShowStep: (nodeId: string) => void;
}) {
  const everyone = useMemo(() => codersOf(view.codings), [view.codings]);
  const [left, setLeft] = useState<ReadonlySet<string>>(new Set());
  const coders = everyone.filter((c) => !left.has(c));
  const agreement = useAgreement(thread, coders, coders.length >= 2);
  const list = useMemo(() => disagreements(view.codings, coders), [view.codings, coders]);
  const name = (id: number) => view.codes.get(id)?.name ?? `code ${id}`;
  if (everyone.length < 2)
    return (
      <p className="muted small" data-testid="agreement-empty">
        Agreement needs two coders: {everyone.length === 0 ? "no one has" : `only ${everyone[0]} has`} coded this family
        so far.
      </p>
    );
  const a = agreement.data;
  return (
    <div className="agreement">
      <fieldset className="agreement-coders">
        <legend className="small">Coders</legend>
        {everyone.map((c) => (
          <label key={c} className="small">
            <input
              type="checkbox"
              checked={!left.has(c)}
              onChange={(e) =>
                setLeft((s) => {
                  const next = new Set(s);
                  if (e.target.checked) next.delete(c);
                  else next.add(c);
                  return next;
                })
              }
            />{" "}
            {c}
          </label>
        ))}
      </fieldset>
      {coders.length < 2 && <p className="muted small">Pick at least two coders.</p>}
      {agreement.error && <p className="muted small">{messageOf(agreement.error)}</p>}
      {a && (
        <>
          <p className="small muted">
            {a.units} {a.units === 1 ? "step" : "steps"} coded by every one of {a.coders.join(", ")}: on each, a coder
            applied a code or did not.
          </p>
          <div className="table-scroll" tabIndex={0} role="region" aria-label="Agreement per code">
            <table className="agreement-table" data-testid="agreement-table" data-units={a.units}>
              <thead>
                <tr>
                  <th scope="col">Code</th>
                  <th scope="col" title="Steps every coder coded">
                    Units
                  </th>
                  {COLUMNS.map((c) => (
                    <th key={c.key} scope="col" title={c.title}>
                      <abbr title={c.title}>{c.head}</abbr>
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {a.codes.map((row) => (
                  <tr key={row.code_id} data-testid="agreement-row" data-code-id={row.code_id}>
                    <th scope="row">{row.name}</th>
                    <td>{row.units}</td>
                    {COLUMNS.map((c) => (
                      <Figure key={c.key} value={row[c.key]} kind={c.key} coders={a.coders.length} />
                    ))}
                  </tr>
                ))}
              </tbody>
              <tfoot>
                <tr data-testid="agreement-overall">
                  <th scope="row">Overall</th>
                  <td>{a.units * a.codes.length}</td>
                  {COLUMNS.map((c) => (
                    <Figure key={c.key} value={a.overall[c.key]} kind={c.key} coders={a.coders.length} />
                  ))}
                </tr>
              </tfoot>
            </table>
          </div>
        </>
      )}
      <h5>Disagreements {list.length > 0 && <span className="muted">({list.length})</span>}</h5>
      {list.length === 0 ? (
        <p className="muted small">None on the steps every coder coded.</p>
      ) : (
        <ul className="disagreements">
          {list.map((d) => (
            <li
              key={`${d.nodeId}:${d.codeId}`}
              data-testid="disagreement-item"
              data-node-id={d.nodeId}
              data-code-id={d.codeId}
            >
              <button type="button" className="link" onClick={() => onShowStep(d.nodeId)}>
                Step {label(d.nodeId)}
              </button>{" "}
              <strong>{name(d.codeId)}</strong>: applied by {d.applied.join(", ")}; not by {d.notApplied.join(", ")}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
