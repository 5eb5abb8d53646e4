-- :Stepwise attach: an image file you name, or the clipboard's image (wl-paste or xclip), goes with the next
-- prompt (:Stepwise run, the chat's :w) as an image block after its text; what is not an image, or no clipboard
-- tool, is said; the chat shows a prompt's images, also after the history is read again.
local H = require('helpers')
local api = vim.api

-- A real 1x1 PNG (the well-known red dot).
local PNG = (
  '89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8cfc0000003010100'
  .. '18dd8db00000000049454e44ae426082'
):gsub('..', function(h)
  return string.char(tonumber(h, 16))
end)

--- The image blocks of the first user message of each request the model got, as { media type, data }.
local function sent_images(m)
  local out = {}
  for _, req in ipairs(H.recorded(m)) do
    local first = ((req.body or req).messages or {})[1] or {}
    local images = {}
    for _, b in ipairs(type(first.content) == 'table' and first.content or {}) do
      if b.type == 'image' then
        images[#images + 1] = { b.source.media_type, b.source.data }
      end
    end
    out[#out + 1] = images
  end
  return out
end

local function notified(cap, text)
  for _, n in ipairs(cap.notify) do
    if n.msg:find(text, 1, true) then
      return n
    end
  end
end

return H.spec({
  {
    name = ':Stepwise attach {path} sends the image with the next :Stepwise run, after its text',
    timeout = 30000,
    fn = function()
      local dir = H.workspace({ ['a.txt'] = 'a\n' })
      -- Outside the workspace: the user names it, so it may lie anywhere.
      local elsewhere = H.tmpdir('pictures')
      H.write(elsewhere .. '/dot.png', PNG)
      local m = H.mock({ H.turn({ text = 'A red dot.' }) })
      H.setup(m)
      local cap = H.capture()
      vim.cmd('Stepwise attach ' .. vim.fn.fnameescape(elsewhere .. '/dot.png'))
      H.truthy(notified(cap, 'image attached (dot.png, image/png, 1 KB); it goes with your next prompt'), vim.inspect(cap.notify))
      H.eq({ elsewhere .. '/dot.png' }, vim.fn.getcompletion('Stepwise attach ' .. elsewhere .. '/d', 'cmdline'), 'completes files')
      vim.cmd('Stepwise run what is this?')
      H.eq('end_turn', H.wait_idle(cap, 15000).reason, 'the run ends')
      local first = (H.recorded(m)[1].body or H.recorded(m)[1]).messages[1].content
      H.eq({ type = 'text', text = 'what is this?' }, first[1], 'the text first')
      H.eq({ { 'image/png', vim.base64.encode(PNG) } }, sent_images(m)[1], 'then the image')
      H.eq(0, require('stepwise.attach').count(require('stepwise').current_folder()), 'the image went with the prompt')
      -- The chat, opened after the run, shows the prompt with its image (from stepwise.conversation).
      vim.cmd('Stepwise chat')
      local buf = api.nvim_get_current_buf()
      H.wait(function()
        return H.buf_text(buf):find('[image: image/png]', 1, true)
      end, 10000, 'the image in the chat history', function()
        return H.buf_text(buf)
      end)
      H.contains(H.buf_text(buf), '## You\n\nwhat is this?\n[image: image/png]', 'under the prompt')
      H.truthy(dir, 'the workspace')
    end,
  },
  {
    name = ':Stepwise attach without a path takes the clipboard\'s image (xclip) for the chat\'s :w',
    timeout = 30000,
    fn = function()
      H.workspace({})
      local bin = H.tmpdir('bin')
      local shot = H.tmpdir('clip') .. '/clip.png'
      H.write(shot, PNG)
      -- A stand-in for xclip: the targets it offers, then the image.
      H.write(bin .. '/xclip', table.concat({
        '#!/bin/sh',
        'case "$*" in',
        '  *TARGETS*) printf "TARGETS\\ntext/plain\\nimage/png\\n" ;;',
        '  *image/png*) cat ' .. vim.fn.shellescape(shot) .. ' ;;',
        '  *) exit 1 ;;',
        'esac',
      }, '\n') .. '\n')
      vim.fn.setfperm(bin .. '/xclip', 'rwxr-xr-x')
      vim.env.PATH = bin .. ':' .. vim.env.PATH
      vim.env.DISPLAY = ':99'
      vim.env.WAYLAND_DISPLAY = nil
      local m = H.mock({ H.turn({ text = 'Red.' }) })
      H.setup(m)
      local cap = H.capture()
      vim.cmd('Stepwise chat')
      local buf = api.nvim_get_current_buf()
      H.wait(function()
        return H.buf_text(buf):find('## You', 1, true)
      end, 10000, 'the chat')
      vim.cmd('Stepwise attach')
      H.truthy(notified(cap, "image attached (the clipboard's image, image/png, 1 KB)"), vim.inspect(cap.notify))
      api.nvim_buf_set_lines(buf, -2, -1, false, { 'and this colour?' })
      vim.cmd('write')
      H.eq('end_turn', H.wait_idle(cap, 15000).reason, 'the run ends')
      H.eq({ { 'image/png', vim.base64.encode(PNG) } }, sent_images(m)[1], 'the clipboard\'s image was sent')
      H.contains(H.buf_text(buf), '## You\n\nand this colour?\n[image: the clipboard\'s image]', 'the chat shows it went')
    end,
  },
  {
    name = 'what cannot be attached is said, and nothing waits',
    fn = function()
      local dir = H.workspace({ ['notes.png'] = 'just text\n' })
      H.setup(nil)
      local cap = H.capture()
      vim.cmd('Stepwise attach notes.png')
      H.truthy(notified(cap, 'notes.png is not a PNG, JPEG, GIF or WebP image'), vim.inspect(cap.notify))
      vim.cmd('Stepwise attach ' .. vim.fn.fnameescape(dir .. '/missing.png'))
      H.truthy(notified(cap, 'missing.png: No such file or directory'), vim.inspect(cap.notify))
      vim.env.DISPLAY, vim.env.WAYLAND_DISPLAY = nil, nil
      vim.cmd('Stepwise attach')
      H.truthy(notified(cap, 'no clipboard tool for images: install wl-paste (Wayland) or xclip (X11)'), vim.inspect(cap.notify))
      H.eq(0, require('stepwise.attach').count(require('stepwise').current_folder()), 'nothing waits')
    end,
  },
})
