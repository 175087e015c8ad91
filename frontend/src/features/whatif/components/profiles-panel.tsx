"use client";
import { useState, type FormEvent } from "react";
import { useProfileActions, useProfiles } from "@/features/whatif/hooks/use-whatif";
import { messageOf } from "@/lib/api/client";

type Provider = "offline" | "openai" | "anthropic";

/** A small settings panel: the caller's model profiles, and a form to add one. Keys
 * and base URLs are the server's; a provider it lacks is refused with its message. */
export function ProfilesPanel({ onError }: { onError: (message: string) => void }) {
  const profiles = useProfiles();
  const { create, remove, saving } = useProfileActions();
  const [name, setName] = useState("");
  const [provider, setProvider] = useState<Provider>("offline");
  const [model, setModel] = useState("");
  const [seed, setSeed] = useState("");
  const [temperature, setTemperature] = useState("");
  const [instructions, setInstructions] = useState("");

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    try {
      await create({
        name: name.trim(),
        provider,
        model: model.trim(),
        params: {
          seed: seed.trim() === "" ? null : Number(seed),
          temperature: temperature.trim() === "" ? null : Number(temperature),
        },
        instructions,
      });
      setName("");
      setSeed("");
      setTemperature("");
      setInstructions("");
    } catch (err) {
      onError(messageOf(err));
    }
  };

  return (
    <section className="profiles-panel" data-testid="profiles-panel" aria-label="Model profiles">
      <h3>Model profiles</h3>
      <ul className="profile-list">
        {(profiles.data ?? []).map((p) => (
          <li key={p.id} data-testid="profile-item" data-profile-id={p.id}>
            <strong>{p.name}</strong>{" "}
            <span className="muted small">
              {p.provider} · {p.model}
              {p.params.seed != null && ` · seed ${p.params.seed}`}
              {p.params.temperature != null && ` · temperature ${p.params.temperature}`}
            </span>
            {p.instructions && <span className="profile-instructions small">“{p.instructions}”</span>}
            {p.id !== "default" && (
              <button
                type="button"
                className="icon"
                aria-label={`Delete the profile ${p.name}`}
                onClick={() => void remove(p.id).catch((err) => onError(messageOf(err)))}
              >
                ✕
              </button>
            )}
          </li>
        ))}
      </ul>
      <form className="profile-form" onSubmit={(e) => void submit(e)}>
        <input
          data-testid="profile-name"
          aria-label="Profile name"
          placeholder="name"
          value={name}
          onChange={(e) => setName(e.target.value)}
        />
        <select
          data-testid="profile-provider"
          aria-label="Provider"
          value={provider}
          onChange={(e) => setProvider(e.target.value as Provider)}
        >
          <option value="offline">offline</option>
          <option value="openai">openai</option>
          <option value="anthropic">anthropic</option>
        </select>
        <input
          aria-label="Model"
          placeholder="model (server's)"
          value={model}
          onChange={(e) => setModel(e.target.value)}
        />
        <input
          data-testid="profile-seed"
          aria-label="Seed"
          placeholder="seed"
          inputMode="numeric"
          value={seed}
          onChange={(e) => setSeed(e.target.value)}
        />
        <input
          aria-label="Temperature"
          placeholder="temperature"
          inputMode="decimal"
          value={temperature}
          onChange={(e) => setTemperature(e.target.value)}
        />
        <textarea
          data-testid="profile-instructions"
          aria-label="Instructions"
          placeholder="instructions (added to the system prompt)"
          rows={2}
          value={instructions}
          onChange={(e) => setInstructions(e.target.value)}
        />
        <button type="submit" data-testid="profile-create" disabled={saving || !name.trim()}>
          Add profile
        </button>
      </form>
    </section>
  );
}
