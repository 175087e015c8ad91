import type { Metadata } from "next";
import type { ReactNode } from "react";
import "@xyflow/react/dist/style.css";
// The stylesheets in cascade order (each later one may override an earlier one).
import "./globals.css";
import "./styles/columns.css";
import "./styles/chat.css";
import "./styles/research.css";
import "./styles/search.css";
import "./styles/ledger.css";
import "./styles/merge.css";
import "./styles/big-trees.css";
import "./styles/narrow.css";
import "./styles/access.css";
import "./styles/whatif.css";
import "./styles/sharing.css";
import "./styles/studies.css";
import "./styles/coding.css";
import { Providers } from "@/components/providers";
import { EARLY_SCRIPT } from "@/lib/api/early";

export const metadata: Metadata = { title: "HAICO studio", description: "Human–AI co-construction studio" };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <head>
        {/* the family's history and graph, asked for while the bundle loads (lib/api/early).
          An inline async module script runs as soon as the parser meets it: a classic
          one would wait for the stylesheet above it (React puts stylesheets first). */}
        <script type="module" async dangerouslySetInnerHTML={{ __html: EARLY_SCRIPT }} />
      </head>
      <body>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
