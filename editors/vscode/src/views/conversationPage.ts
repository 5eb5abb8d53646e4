// The Conversation view's page: the bundled script (src/webview, dist/webview.js) and its styles under a strict
// Content-Security-Policy: no inline script but its own (by nonce), images only from the extension or data URLs.
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';

export function pageHtml(webview: vscode.Webview, media: vscode.Uri, dist: vscode.Uri): string {
  const nonce = crypto.randomBytes(18).toString('base64');
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
  ].join('; ');
  const css = webview.asWebviewUri(vscode.Uri.joinPath(media, 'conversation.css'));
  const js = webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js'));
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${css}">
<title>Conversation</title></head>
<body><div id="app"></div><script nonce="${nonce}" src="${js}"></script></body></html>`;
}
