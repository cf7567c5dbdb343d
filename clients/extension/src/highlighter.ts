/** The content script the background injects into a tab (scripting.executeScript, with activeTab or the
 * page's host permission) to read the selection and draw highlights. It defines no global and answers
 * only the extension's own runtime messages; it holds nothing between two of them. */

import type { PageRequest } from "./lib/marks.ts";
import { handlePageRequest } from "./lib/page.ts";

chrome.runtime.onMessage.addListener((message: PageRequest, sender, reply: (answer: unknown) => void) => {
  if (sender.id !== chrome.runtime.id || sender.tab) return false; // only the background, never another tab
  const answer = handlePageRequest(document, message);
  if (answer === null) return false;
  reply(answer);
  return false;
});
