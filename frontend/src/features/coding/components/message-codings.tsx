"use client";
import { useCodingView, type CodingView } from "@/features/coding/hooks/use-coding";
import { selectionTarget } from "@/features/coding/hooks/use-text-selection";
import { DEFAULT_COLOUR, ofField, type Coding, type CodingField } from "@/features/coding/lib/codings";
import { excerpt } from "@/features/coding/lib/offsets";

/** "Code" on a message: the text selected in it, else the whole step (the picker). */
export function CodingButton({ nodeId }: { nodeId: string }) {
  const { canCode, open } = useCodingView();
  if (!canCode || !nodeId) return null;
  return (
    <button
      type="button"
      className="coding-button link"
      data-testid="coding-button"
      data-scope="step"
      data-node-id={nodeId}
      aria-keyshortcuts="k"
      title="Code the text selected in this message, or the whole step (key: k)"
      // keep the selection: a click on the button must not clear it first
      onMouseDown={(e) => e.preventDefault()}
      onClick={(e) => {
        const picked = selectionTarget();
        const box = e.currentTarget.getBoundingClientRect();
        const message = e.currentTarget.closest<HTMLElement>('[data-testid="chat-message"]');
        open(
          picked && picked.nodeId === nodeId
            ? picked
            : { nodeId, span: null, quote: null, at: { x: box.left, y: box.bottom }, returnTo: message },
        );
      }}
    >
      Code
    </button>
  );
}

function CodingItem({ c, text, view }: { c: Coding; text: string; view: CodingView }) {
  const code = view.codes.get(c.code_id);
  const mine = c.mine;
  const name = code?.name ?? `code ${c.code_id}`;
  return (
    <li
      className="coding-item"
      data-testid="coding-item"
      data-code-id={c.code_id}
      data-coding-id={c.id}
      data-coder={c.coder}
      data-mine={mine ? "true" : "false"}
    >
      <span className="code-dot" style={{ background: code?.color ?? DEFAULT_COLOUR }} aria-hidden />
      <strong className="coding-code">{name}</strong>
      {c.span ? (
        <span className="coding-quote">“{excerpt(text, c.span, 60)}”</span>
      ) : (
        <span className="muted small">the whole step</span>
      )}
      {c.memo && <span className="coding-memo">— {c.memo}</span>}
      {!mine && <span className="muted small coding-coder">by {c.coder}</span>}
      {c.imported_author && <span className="muted small coding-coder">first coded by {c.imported_author}</span>}
      {mine && view.canCode && (
        <button
          type="button"
          className="icon"
          data-testid="coding-delete"
          aria-label={`Delete the coding “${name}”`}
          onClick={() => view.remove(c.id)}
        >
          ✕
        </button>
      )}
    </li>
  );
}

/** The codings of one message: its field's spans, and (under the user's message) the
 * codings of the whole step. Blind coding says so. */
export function MessageCodings({
  nodeId,
  field,
  text,
  wholeStep,
}: {
  nodeId: string;
  field: CodingField;
  text: string;
  /** list the codings of the whole step here too */
  wholeStep?: boolean;
}) {
  const view = useCodingView();
  const all = view.byNode.get(nodeId);
  if (!all || !nodeId) return null;
  const shown = [...ofField(all, field), ...(wholeStep ? ofField(all, null) : [])];
  if (shown.length === 0) return null;
  return (
    <ul
      className="codings"
      aria-label={view.blindForMe ? "Your codings (blind: only yours are shown)" : "Codings"}
      data-blind={view.blindForMe ? "true" : undefined}
    >
      {shown.map((c) => (
        <CodingItem key={c.id} c={c} text={text} view={view} />
      ))}
    </ul>
  );
}
