// The entry Pi loads for this package. It lives in a directory named `pi-context` because Pi
// labels an extension in its startup list by the directory of its `index.ts` (an entry at
// `src/index.ts` was listed as "src"); the code itself stays under `src/`.
export { default } from "../src/index.ts";
