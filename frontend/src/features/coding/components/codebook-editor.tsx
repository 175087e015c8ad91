"use client";
import { useState, type FormEvent } from "react";
import type { useCodingActions } from "@/features/coding/hooks/use-coding-data";
import { DEFAULT_COLOUR, nextColour, type Code, type Codebook } from "@/features/coding/lib/codings";
import { messageOf } from "@/lib/api/client";

type Actions = ReturnType<typeof useCodingActions>;

/** The caller's codebooks: make one (a name and its first codes), and in each add,
 * rename, recolour and retire codes (a code is retired, never deleted: its codings
 * keep it). */
export function CodebookEditor({
  books,
  actions,
  onError,
}: {
  books: readonly Codebook[];
  actions: Actions;
  onError: (message: string) => void;
}) {
  const [name, setName] = useState("");
  const [codes, setCodes] = useState("");
  const create = async (e: FormEvent) => {
    e.preventDefault();
    const first = codes
      .split(",")
      .map((c) => c.trim())
      .filter(Boolean);
    try {
      await actions.createBook({
        name: name.trim(),
        codes: [...new Set(first)].map((c, i) => ({ name: c, color: nextColour(i) })),
      });
      setName("");
      setCodes("");
    } catch (err) {
      onError(messageOf(err));
    }
  };
  return (
    <div className="codebooks">
      {books.map((b) => (
        <BookCard key={b.id} book={b} actions={actions} onError={onError} />
      ))}
      <form className="codebook-new" onSubmit={(e) => void create(e)} aria-label="A new codebook">
        <h5>{books.length === 0 ? "Make a codebook" : "Another codebook"}</h5>
        <input
          data-testid="codebook-name"
          aria-label="Codebook name"
          placeholder="Name, e.g. Trust"
          value={name}
          onChange={(e) => setName(e.target.value)}
        />
        <input
          data-testid="codebook-codes"
          aria-label="Its codes, comma-separated"
          placeholder="Codes, comma-separated: hedging, overclaiming"
          value={codes}
          onChange={(e) => setCodes(e.target.value)}
        />
        <button type="submit" data-testid="codebook-create" disabled={!name.trim()}>
          Make codebook
        </button>
      </form>
    </div>
  );
}

function BookCard({ book, actions, onError }: { book: Codebook; actions: Actions; onError: (m: string) => void }) {
  const [adding, setAdding] = useState("");
  const [colour, setColour] = useState<string | null>(null);
  const [showRetired, setShowRetired] = useState(false);
  const patch = (p: Parameters<Actions["patchBook"]>[0]["patch"]) =>
    actions.patchBook({ id: book.id, patch: p }).catch((err: unknown) => onError(messageOf(err)));
  const add = async (e: FormEvent) => {
    e.preventDefault();
    const n = adding.trim();
    if (!n) return;
    await patch({ add: [{ name: n, color: colour ?? nextColour(book.codes.length) }] });
    setAdding("");
    setColour(null);
  };
  const live = book.codes.filter((c) => !c.retired);
  const retired = book.codes.filter((c) => c.retired);
  return (
    <section className="codebook" data-testid="codebook" data-codebook-id={book.id}>
      <h5>{book.name}</h5>
      <ul className="code-list">
        {live.map((c) => (
          <CodeRow
            key={c.id}
            code={c}
            onRename={(n) => void patch({ rename: [{ id: c.id, name: n }] })}
            onRetire={() => void patch({ retire: [c.id] })}
          />
        ))}
      </ul>
      {retired.length > 0 && (
        <button type="button" className="link small" onClick={() => setShowRetired((v) => !v)}>
          {showRetired ? "Hide" : "Show"} {retired.length} retired
        </button>
      )}
      {showRetired && (
        <ul className="code-list retired">
          {retired.map((c) => (
            <li key={c.id} className="muted">
              <span className="code-dot" style={{ background: c.color ?? DEFAULT_COLOUR }} aria-hidden /> {c.name}{" "}
              (retired)
            </li>
          ))}
        </ul>
      )}
      <form className="code-add" onSubmit={(e) => void add(e)}>
        <input
          data-testid="code-add-name"
          aria-label={`A new code in ${book.name}`}
          placeholder="New code"
          value={adding}
          onChange={(e) => setAdding(e.target.value)}
        />
        <input
          type="color"
          data-testid="code-add-colour"
          aria-label="Its colour"
          value={colour ?? nextColour(book.codes.length)}
          onChange={(e) => setColour(e.target.value)}
        />
        <button type="submit" data-testid="code-add" disabled={!adding.trim()}>
          Add
        </button>
      </form>
    </section>
  );
}

function CodeRow({ code, onRename, onRetire }: { code: Code; onRename: (n: string) => void; onRetire: () => void }) {
  const [editing, setEditing] = useState<string | null>(null);
  return (
    <li className="code-row" data-testid="code-row" data-code-id={code.id}>
      <span className="code-dot" style={{ background: code.color ?? DEFAULT_COLOUR }} aria-hidden />
      {editing === null ? (
        <>
          <span className="code-name">{code.name}</span>
          <button
            type="button"
            className="link small"
            aria-label={`Rename ${code.name}`}
            onClick={() => setEditing(code.name)}
          >
            rename
          </button>
          <button type="button" className="link small" aria-label={`Retire ${code.name}`} onClick={onRetire}>
            retire
          </button>
        </>
      ) : (
        <form
          className="code-rename"
          onSubmit={(e) => {
            e.preventDefault();
            if (editing.trim() && editing.trim() !== code.name) onRename(editing.trim());
            setEditing(null);
          }}
        >
          <input
            aria-label={`New name for ${code.name}`}
            value={editing}
            autoFocus
            onChange={(e) => setEditing(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Escape") {
                e.stopPropagation();
                setEditing(null);
              }
            }}
          />
          <button type="submit">Save</button>
        </form>
      )}
    </li>
  );
}
