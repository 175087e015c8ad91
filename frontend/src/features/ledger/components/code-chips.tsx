/** The codes of a step's notes, as small chips on its graph card. */
export function CodeChips({ codes }: { codes: readonly string[] }) {
  const shown = codes.slice(0, 3);
  return (
    <div className="code-chips" data-testid="code-chips" title={`Coded: ${codes.join(", ")}`}>
      {shown.map((c) => (
        <span key={c} className="code-chip" data-testid="code-chip">
          {c}
        </span>
      ))}
      {codes.length > shown.length && <span className="code-chip more">+{codes.length - shown.length}</span>}
    </div>
  );
}
