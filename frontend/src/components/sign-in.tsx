"use client";
import { useState } from "react";

/** Token mode: asked once; the token is kept in local storage. */
export function SignIn({ onSubmit }: { onSubmit: (token: string) => void }) {
  const [token, setToken] = useState("");
  return (
    <main className="sign-in">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (token.trim()) onSubmit(token.trim());
        }}
      >
        <h1>HAICO</h1>
        <p>
          This server asks for an API token. Create one with <code>haico users create NAME</code>.
        </p>
        <input
          data-testid="token-input"
          type="password"
          autoFocus
          placeholder="API token"
          value={token}
          onChange={(e) => setToken(e.target.value)}
        />
        <button data-testid="token-submit" type="submit" disabled={!token.trim()}>
          Sign in
        </button>
      </form>
    </main>
  );
}
