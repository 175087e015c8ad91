import type { NextConfig } from "next";

// The studio is a static export served by the backend at `/`. In `next dev` the
// API lives on another port, so /api is rewritten to it (rewrites are dev-only:
// a static export has no server to run them).
const isDev = process.env.NODE_ENV === "development";
const backend = process.env.HAICO_BACKEND_URL ?? "http://127.0.0.1:8000";

const config: NextConfig = {
  output: isDev ? undefined : "export",
  reactStrictMode: true,
  images: { unoptimized: true },
  ...(isDev
    ? {
        async rewrites() {
          return [{ source: "/api/:path*", destination: `${backend}/api/:path*` }];
        },
      }
    : {}),
};

export default config;
