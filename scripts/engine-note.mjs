#!/usr/bin/env node
// postinstall: when npm itself ran on a Node older than 22, npm has just printed EBADENGINE
// warnings for the packages that want Node 22 (wrangler, miniflare, ...). They are expected:
// every npm script and npx runs on Node 22 from the `node` devDependency. Say so in one line.
const ranOn = /\bnode\/v(\d+)\.\S*/.exec(process.env.npm_config_user_agent ?? "");
if (ranOn && Number(ranOn[1]) < 22) {
  console.log(`toolshed: npm ran on Node ${ranOn[0].slice(5)}; the EBADENGINE warnings above are expected: npm start, npm test and npx run on Node 22 from the node package (README, Requirements).`);
}
