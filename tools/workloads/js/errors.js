// What a failed workload says about its error, shared by mongosh/common.js and node/common.js: one
// stderr line `error: code=N codeName=NAME labels=A,B` after the stack, so a test can read the
// server's code and labels (or the writeConcernError's) without parsing a driver's message.
// pymongo, the Rust driver and the legacy C++ driver print them in their messages already;
// php/common.php prints the same line.

function errorLine(err) {
  if (err === null || typeof err !== 'object') return 'error: ' + String(err);
  const wce = err.writeConcernError || (err.result && err.result.writeConcernError) || null;
  const code = err.code !== undefined ? err.code : wce ? wce.code : undefined;
  const codeName = err.codeName !== undefined ? err.codeName : wce ? wce.codeName : undefined;
  let labels = [];
  if (Array.isArray(err.errorLabels)) labels = err.errorLabels;
  else if (err.errorLabelSet) labels = Array.from(err.errorLabelSet);
  return `error: ${err.name || 'Error'} code=${code === undefined ? '' : code} ` +
    `codeName=${codeName === undefined ? '' : codeName} labels=${labels.join(',')}`;
}

module.exports = { errorLine };
