/** The parts of a document a download needs (tests hand in a fake). */
export type DownloadDocument = Pick<Document, "createElement" | "body">;

/** Hands `blob` to the browser as a file named `name` (a download, no navigation). */
export function saveFile(blob: Blob, name: string, doc: DownloadDocument = document): void {
  const url = URL.createObjectURL(blob);
  const a = doc.createElement("a");
  a.href = url;
  a.download = name;
  a.style.display = "none";
  doc.body.appendChild(a);
  a.click();
  a.remove();
  // (revoked later: the download may not have read it yet)
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
