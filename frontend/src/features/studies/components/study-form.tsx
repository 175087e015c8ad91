"use client";
import { useState, type FormEvent } from "react";
import { messageOf } from "@/lib/api/client";
import { useProfiles } from "@/features/whatif/hooks/use-whatif";
import { useCodebooks } from "@/features/coding/hooks/use-coding-data";
import { useCreateStudy } from "@/features/studies/hooks/use-studies";
import {
  ALL_FEATURES,
  FEATURE_SWITCHES,
  draftBody,
  draftProblem,
  emptyDraft,
  featuresText,
  withSwitch,
  type ConditionDraft,
  type StudyDraft,
} from "@/features/studies/lib/studies";
import type { Study } from "@/features/studies/lib/types";

/** A new study: its name, the task every participant starts from (objective, document,
 * preferences, to-dos), its conditions with the features each allows and an optional
 * model profile, the consent text, and the codebook its coders code with. */
export function StudyForm({ onCreated, onCancel }: { onCreated: (study: Study) => void; onCancel?: () => void }) {
  const [draft, setDraft] = useState<StudyDraft>(emptyDraft);
  const [problem, setProblem] = useState<string | null>(null);
  const create = useCreateStudy();
  const profiles = useProfiles();
  const codebooks = useCodebooks(null);
  const set = <K extends keyof StudyDraft>(key: K, value: StudyDraft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const setCondition = (i: number, next: Partial<ConditionDraft>) =>
    setDraft((d) => ({ ...d, conditions: d.conditions.map((c, j) => (j === i ? { ...c, ...next } : c)) }));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const wrong = draftProblem(draft);
    setProblem(wrong);
    if (wrong !== null) return;
    create.mutate(draftBody(draft), { onSuccess: onCreated, onError: (err) => setProblem(messageOf(err)) });
  };
  const field = (
    key: keyof StudyDraft,
    label: string,
    testId: string,
    opts: { area?: boolean; hint?: string } = {},
  ) => (
    <label className="study-field">
      <span>{label}</span>
      {opts.area ? (
        <textarea
          data-testid={testId}
          rows={3}
          value={draft[key] as string}
          placeholder={opts.hint}
          onChange={(e) => set(key, e.target.value)}
        />
      ) : (
        <input
          data-testid={testId}
          value={draft[key] as string}
          placeholder={opts.hint}
          onChange={(e) => set(key, e.target.value)}
        />
      )}
    </label>
  );
  return (
    <form className="study-form" data-testid="study-form" onSubmit={submit} aria-label="New study">
      <h2>New study</h2>
      {field("name", "Name", "study-name", { hint: "Essay co-writing, spring cohort" })}
      {field("description", "Description (for you and your team)", "study-description", { area: true })}
      <fieldset>
        <legend>The task every participant starts from</legend>
        {field("objective", "Objective", "study-objective", { hint: "Write a 300-word op-ed on…" })}
        {field("documentTitle", "Document title", "study-document-title")}
        {field("documentContent", "Document", "study-document", { area: true })}
        {field("preferences", "Preferences (one a line)", "study-preferences", { area: true })}
        {field("todos", "To-dos (one a line)", "study-todos", { area: true })}
      </fieldset>
      <fieldset>
        <legend>Conditions (participants are spread evenly over them, in join order)</legend>
        {draft.conditions.map((c, i) => (
          <div className="study-condition" key={i} data-testid="study-condition" data-index={i}>
            <div className="study-condition-head">
              <label className="study-field">
                <span>Condition name</span>
                <input
                  data-testid="condition-name"
                  value={c.name}
                  onChange={(e) => setCondition(i, { name: e.target.value })}
                />
              </label>
              <label className="study-field">
                <span>Model profile</span>
                <select
                  data-testid="condition-profile"
                  value={c.profileId}
                  onChange={(e) => setCondition(i, { profileId: e.target.value })}
                >
                  <option value="">The server's default</option>
                  {(profiles.data ?? []).map((p) => (
                    <option key={p.id} value={p.id}>
                      {p.name}
                    </option>
                  ))}
                </select>
              </label>
              <button
                type="button"
                className="icon"
                data-testid="condition-remove"
                aria-label={`Remove the condition ${c.name || i + 1}`}
                disabled={draft.conditions.length === 1}
                onClick={() =>
                  set(
                    "conditions",
                    draft.conditions.filter((_, j) => j !== i),
                  )
                }
              >
                ✕
              </button>
            </div>
            <div className="study-switches" role="group" aria-label={`What ${c.name || "this condition"} allows`}>
              {FEATURE_SWITCHES.map((s) => (
                <label key={s.key} className="study-switch" title={s.hint}>
                  <input
                    type="checkbox"
                    data-testid={`condition-${s.key}`}
                    checked={c.features[s.key]}
                    onChange={(e) => setCondition(i, { features: withSwitch(c.features, s.key, e.target.checked) })}
                  />
                  {s.label}
                </label>
              ))}
              <span className="muted small">{featuresText(c.features)}</span>
            </div>
          </div>
        ))}
        <button
          type="button"
          data-testid="condition-add"
          onClick={() =>
            set("conditions", [
              ...draft.conditions,
              { name: `Condition ${draft.conditions.length + 1}`, profileId: "", features: { ...ALL_FEATURES } },
            ])
          }
        >
          + Add a condition
        </button>
      </fieldset>
      {field("consent", "Consent text (shown before the first turn; empty: none asked)", "study-consent", {
        area: true,
      })}
      <label className="study-field">
        <span>Codebook for the study&apos;s coders (one of yours; made from a step&apos;s coding drawer)</span>
        <select
          data-testid="study-codebook"
          value={draft.codebookId}
          onChange={(e) => set("codebookId", e.target.value)}
        >
          <option value="">None yet</option>
          {(codebooks.data ?? []).map((b) => (
            <option key={b.id} value={String(b.id)}>
              {b.name} ({b.codes.filter((c) => !c.retired).length} codes)
            </option>
          ))}
        </select>
      </label>
      {problem && (
        <p className="error-text" role="alert" data-testid="study-form-error">
          {problem}
        </p>
      )}
      <div className="dialog-actions">
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
        <button type="submit" className="primary" data-testid="study-create" disabled={create.isPending}>
          Create the study
        </button>
      </div>
    </form>
  );
}
