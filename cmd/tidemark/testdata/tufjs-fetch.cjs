// tufjs-fetch: a stock tuf-js client (the TUF client npm's sigstore uses)
// trusting root.json in METADATA_DIR refreshes from METADATA_URL, downloads
// TARGET from TARGETS_URL, verifies it, and prints its bytes. The TUF e2e
// test runs it against tidemark serve (NODE_PATH: bin/tufjs/node_modules).
//
//   node tufjs-fetch.cjs METADATA_URL TARGETS_URL METADATA_DIR TARGET_DIR TARGET
'use strict';
const fs = require('fs');
const { Updater } = require('tuf-js');

async function main() {
  const [metadataBaseUrl, targetBaseUrl, metadataDir, targetDir, target] = process.argv.slice(2);
  const updater = new Updater({ metadataBaseUrl, targetBaseUrl, metadataDir, targetDir });
  await updater.refresh();
  const info = await updater.getTargetInfo(target);
  if (!info) {
    throw new Error(`no target ${target}`);
  }
  const path = await updater.downloadTarget(info);
  process.stdout.write(fs.readFileSync(path));
}

main().catch((err) => {
  console.error(`tufjs-fetch: ${err.stack || err}`);
  process.exit(1);
});
