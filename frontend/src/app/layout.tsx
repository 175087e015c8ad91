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
import { Providers } from "@/components/app/providers";

export const metadata: Metadata = { title: "HAICO studio", description: "Human–AI co-construction studio" };

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
