"use client";
import type { ReactNode } from "react";
import type { useStudioActions } from "@/hooks/use-studio-actions";
import type { Conversation, Schemas, SearchHit } from "@/lib/api/client";
import { progressText } from "@/lib/research";
import type { Whereabouts } from "@/lib/where";
import { HistoryMenu } from "./history-menu";
import { SearchBox } from "./search-box";
import { TitleBar } from "./title-bar";

export interface StudioHeaderProps {
  /** the thread in the URL; null on the landing page */
  anchor: string | null;
  conversations: Conversation[] | undefined;
  /** the threads of the families shared with the caller (the history menu's own group) */
  shared: readonly Schemas["SharedConversationOut"][];
  loading: boolean;
  displayed: string | null;
  familyRoot: string | null;
  current: Conversation | undefined;
  where: Whereabouts;
  restoredAt: string | null;
  labels: ReadonlyMap<string, string>;
  act: ReturnType<typeof useStudioActions>;
  onOpen: (c: Conversation) => void;
  onArchive: (c: Conversation) => void;
  onSearchHit: (hit: SearchHit) => void;
  onKeys: () => void;
  /** moves the keyboard focus to the message box */
  toComposer: () => void;
  /** the page was opened through a share link, which owns nothing (no new, no import) */
  viaLink: boolean;
  /** the owner's share button (null for anyone else) */
  share: ReactNode;
  /** the menu links to the caller's studies (token mode, a user of one's own) */
  studies?: boolean;
}

/** The studio's top bar: the skip link, the conversations menu, import progress, new
 * conversation, where am I (title and path), search, and the keys overlay's button. */
export function StudioHeader(props: StudioHeaderProps) {
  const { anchor, act } = props;
  return (
    <>
      {anchor !== null && (
        <a
          className="skip-link"
          href="#message-input"
          data-testid="skip-link"
          onClick={(e) => {
            e.preventDefault();
            props.toComposer();
          }}
        >
          Skip to the message box
        </a>
      )}
      <header className="topbar">
        <span className="brand">HAICO</span>
        <HistoryMenu
          conversations={props.conversations}
          shared={props.shared}
          loading={props.loading}
          currentThread={props.displayed}
          currentRoot={props.familyRoot}
          onOpen={props.onOpen}
          onArchive={props.onArchive}
          onNew={() => void act.newConversation()}
          onRename={act.renameConversation}
          onDelete={(c) => void act.deleteConversation(c)}
          onExport={(c, format) => void act.exportConversation(c, format)}
          onImport={(f) => void act.importConversation(f)}
          importing={act.importing !== null}
          owns={!props.viaLink}
          labels={props.labels}
          studies={props.studies}
        />
        {act.importing && (
          <span className="import-progress" data-testid="import-progress" role="status" title={act.importing.fileName}>
            Importing {act.importing.fileName}
            <progress max={Math.max(1, act.importing.total)} value={act.importing.loaded} />
            <span className="muted">{progressText(act.importing.loaded, act.importing.total)}</span>
          </span>
        )}
        {!props.viaLink && (
          <button
            type="button"
            className="primary"
            data-testid="new-conversation"
            onClick={() => void act.newConversation()}
          >
            + New conversation
          </button>
        )}
        {anchor !== null && (
          <TitleBar
            conversation={props.current}
            where={props.where}
            restoredAt={props.restoredAt}
            onRename={act.renameConversation}
          />
        )}
        {props.share}
        <SearchBox conversations={props.conversations} labels={props.labels} onPick={props.onSearchHit} />
        <button
          type="button"
          className="keys-button"
          data-testid="keys-button"
          aria-keyshortcuts="?"
          title="Keys (?)"
          onClick={props.onKeys}
        >
          <span aria-hidden="true">?</span>
          <span className="sr-only">Keyboard keys and step labels</span>
        </button>
      </header>
    </>
  );
}
