/**
 * A thread's transcript grouped into turns (the chat's unit): the user's message,
 * the tool calls the agent made, its reply, and how the turn ended. Pure.
 */
import type { components } from "@/lib/api/schema";

export type Message = components["schemas"]["MessageOut"];

export interface ToolActivity {
  name: string;
  args: Record<string, unknown>;
  failed: boolean;
}

export type TurnState = "complete" | "cancelled" | "error" | "running";

export interface ChatTurn {
  turn: number;
  question: string;
  reply: string;
  tools: ToolActivity[];
  state: TurnState;
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Group messages by turn, in order. Node states from the graph win over what the
 * transcript says (a failed turn may have recorded no reply at all). */
export function groupTurns(messages: readonly Message[], states?: ReadonlyMap<number, TurnState>): ChatTurn[] {
  const turns: ChatTurn[] = [];
  let current: ChatTurn | undefined;
  for (const m of messages) {
    if (m.role === "user" || current === undefined || m.turn_index !== current.turn) {
      current = { turn: m.turn_index, question: "", reply: "", tools: [], state: "complete" };
      turns.push(current);
    }
    if (m.role === "user") {
      current.question = m.content;
    } else if (m.role === "assistant") {
      if (m.content) current.reply = current.reply ? `${current.reply}\n\n${m.content}` : m.content;
      const calls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
      for (const call of calls) {
        const c = asRecord(call);
        current.tools.push({ name: String(c.name ?? "tool"), args: asRecord(c.args), failed: false });
      }
      if (m.state === "cancelled" || m.state === "error") current.state = m.state;
    } else if (m.role === "tool" && m.status === "error") {
      const match = [...current.tools].reverse().find((t) => t.name === m.name && !t.failed);
      if (match) match.failed = true;
    }
  }
  if (states) {
    for (const t of turns) t.state = states.get(t.turn) ?? t.state;
  }
  return turns;
}

/** A short human line for one tool call ("set objective: …"). */
export function describeTool(tool: ToolActivity): string {
  const name = tool.name.replace(/_/g, " ");
  const first = Object.values(tool.args).find((v) => typeof v === "string" || typeof v === "number");
  if (first === undefined) return name;
  const text = String(first);
  return `${name}: ${text.length > 60 ? `${text.slice(0, 57)}…` : text}`;
}
