-- The plugin's workspace/applyEdit handler, driven directly with edits made up here.
local H = require('helpers')
local api = vim.api

local function handler()
  return require('stepwise.handlers').handlers()['workspace/applyEdit']
end

local function setup_buffer(text)
  local dir = H.workspace({ ['doc.txt'] = text })
  H.setup(nil)
  vim.cmd.edit(vim.fn.fnameescape(dir .. '/doc.txt'))
  local buf = api.nvim_get_current_buf()
  local c = H.wait_attached(buf)
  return dir, buf, c
end

local function text_edit(buf, version, line, from, to, new)
  return {
    documentChanges = {
      {
        textDocument = { uri = vim.uri_from_bufnr(buf), version = version },
        edits = { { range = { start = { line = line, character = from }, ['end'] = { line = line, character = to } }, newText = new } },
      },
    },
  }
end

return H.spec({
  {
    name = 'two edits applied in the same tick are two undo blocks',
    fn = function()
      local _, buf, c = setup_buffer('aaa\nbbb\n')
      local v = vim.b[buf].changedtick
      local r1 = handler()(nil, { edit = text_edit(buf, v, 0, 0, 3, 'AAA') }, { client_id = c.id })
      local r2 = handler()(nil, { edit = text_edit(buf, vim.b[buf].changedtick, 1, 0, 3, 'BBB') }, { client_id = c.id })
      H.eq({ applied = true }, r1, 'first edit')
      H.eq({ applied = true }, r2, 'second edit')
      H.eq('AAA\nBBB', H.buf_text(buf), 'both applied')
      vim.cmd('silent normal! u')
      H.eq('AAA\nbbb', H.buf_text(buf), 'one u reverts the second edit only')
      vim.cmd('silent normal! u')
      H.eq('aaa\nbbb', H.buf_text(buf), 'the second u reverts the first')
    end,
  },
  {
    name = 'an edit made for an older version of the buffer is refused',
    fn = function()
      local _, buf, c = setup_buffer('one\n')
      local old = vim.b[buf].changedtick
      api.nvim_buf_set_lines(buf, 0, 1, false, { 'typed by the user' })
      local r = handler()(nil, { edit = text_edit(buf, old, 0, 0, 3, 'ONE') }, { client_id = c.id })
      H.eq(false, r.applied, 'applied')
      H.contains(r.failureReason, 'changed in the editor', 'failureReason')
      H.eq('typed by the user', H.buf_text(buf), 'the buffer is untouched')
    end,
  },
  {
    name = 'a new file gets exactly the text written (no extra newline); virtual text marks the edit',
    fn = function()
      local dir, _, c = setup_buffer('x\n')
      local uri = vim.uri_from_fname(dir .. '/made.txt')
      local edit = {
        documentChanges = {
          { kind = 'create', uri = uri, options = { ignoreIfExists = true } },
          {
            textDocument = { uri = uri, version = vim.NIL },
            edits = { { range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 0 } }, newText = 'l1\nl2\n' } },
          },
        },
      }
      -- The plan step comes with the tool call the edit belongs to (stepwise/toolCall), before the edit.
      local handlers = require('stepwise.handlers').handlers()
      handlers['stepwise/toolCall'](nil, { workspace = vim.uri_from_fname(dir), name = 'write_file', phase = 'started', step = 'Make it' }, { client_id = c.id })
      local r = handler()(nil, { edit = edit, label = 'stepwise: write_file made.txt' }, { client_id = c.id })
      H.eq({ applied = true }, r, 'applied')
      H.eq('l1\nl2\n', H.read(dir .. '/made.txt'), 'the file on disk')
      local b = vim.fn.bufnr(dir .. '/made.txt')
      local mark = require('stepwise.marks').get(b)
      H.truthy(mark and mark.text:find('Make it', 1, true), 'virtual text names the step of the tool call: ' .. vim.inspect(mark))
    end,
  },
})
