-- Code intelligence through Neovim (issue 36) with a real Python language server attached to the buffer
-- (pylsp with pyflakes, installed by tests/intel/setup.sh from PyPI under ~/.cache/stepwise-tools/intel): the
-- agent's edit adds an error; the server asks Neovim (`stepwise/query`) for the diagnostics of the version it
-- wrote; pylsp's error reaches the model with file and line, and the chat lists it under the call.
local H = require('helpers')
local pylsp = require('pylsp')
local api = vim.api

--- The text blocks of the last user message of a recorded request.
local function last_user_text(request)
  local messages = request and request.body and request.body.messages or request and request.messages or {}
  local last = messages[#messages] or {}
  local parts = {}
  for _, b in ipairs(type(last.content) == 'table' and last.content or {}) do
    if type(b) == 'table' and type(b.text) == 'string' then
      parts[#parts + 1] = b.text
    end
  end
  return table.concat(parts, '\n')
end

return H.spec({
  {
    name = "query pylsp: the error of the agent's edit reaches the model with file and line, and the chat lists it",
    timeout = 200000,
    fn = function()
      local bin = pylsp.bin()
      local dir = H.workspace({ ['calc.py'] = 'x = 1\nprint(x)\n' })
      local m = H.mock({
        H.turn({ calls = { { 'edit_file', { path = 'calc.py', old_text = 'print(x)', new_text = 'print(y)' } } } }),
        H.turn({ text = 'Changed it.' }),
      })
      H.setup(m)
      local cap = H.capture()
      vim.cmd.edit(vim.fn.fnameescape(dir .. '/calc.py'))
      local buf = api.nvim_get_current_buf()
      local stepwise = H.wait_attached(buf)
      H.eq(true, stepwise.config.capabilities.experimental.stepwise.query, 'the query capability is declared')
      -- pylsp beside stepwise on the same buffer, as the user's own language server
      local id = vim.lsp.start({ name = 'pylsp', cmd = { bin .. '/pylsp' }, root_dir = dir }, { bufnr = buf })
      H.truthy(id, 'pylsp started')
      H.wait(function()
        local c = vim.lsp.get_client_by_id(id)
        return c and c.initialized and (c.attached_buffers or {})[buf]
      end, 30000, 'pylsp attached')
      -- its first diagnostics (none: the file is clean) were published
      H.wait(function()
        return vim.b[buf].changedtick and #vim.diagnostic.get(buf) == 0 and require('stepwise.query').settled(buf, nil)
      end, 30000, "pylsp's first diagnostics")

      vim.cmd('Stepwise chat')
      local chat = api.nvim_get_current_buf()
      vim.cmd('Stepwise run Print y instead')
      H.wait_idle(cap, 60000)
      H.eq('x = 1\nprint(y)', H.buf_text(buf), 'the edit landed in the buffer')

      local requests = H.recorded(m)
      H.eq(2, #requests, 'two requests to the model')
      local told = last_user_text(requests[2])
      H.contains(told, '<diagnostics>', 'the block')
      H.contains(told, "calc.py:2:7: error: undefined name 'y' (pyflakes)", 'the error with file and line')
      -- the chat lists it under the call
      H.wait(function()
        return H.buf_text(chat):find("⚠ calc.py:2:7: error: undefined name 'y'", 1, true)
      end, 5000, 'the line in the chat', function()
        return H.buf_text(chat)
      end)
      local text = H.buf_text(chat)
      local call = text:find('edit_file', 1, true)
      local line = text:find('⚠ calc.py:2:7', 1, true)
      H.truthy(call and line and call < line, 'the line comes under the call')
      vim.lsp.stop_client(id, true)
    end,
  },
  {
    name = 'query pylsp: a file open in a buffer that the agent read, then a shell command broke, is reloaded, checked, and its error reaches the model; one no buffer holds is loaded, checked, and its error listed as not compared',
    timeout = 200000,
    fn = function()
      local bin = pylsp.bin()
      local dir = H.workspace({
        ['calc.py'] = 'x = 1\nprint(x)\n',
        ['other.py'] = 'y = 2\nprint(y)\n',
        ['third.py'] = 'y = 3\nprint(y)\n',
      })
      -- other.py, open in a buffer, is read first: Neovim is asked for its errors from before (none); third.py is
      -- in no buffer (a read does not load it), and Neovim cannot check its text from before the command, so its
      -- errors are listed as not compared, never claimed as new.
      local m = H.mock({
        H.turn({
          calls = {
            { 'read_file', { path = 'other.py' } },
            { 'bash', { command = "sed -i 's/print(y)/print(w)/' other.py third.py" } },
          },
        }),
        H.turn({ text = 'Changed it.' }),
      })
      H.setup(m)
      local cap = H.capture()
      -- pylsp as the user's configuration starts it, for every Python buffer, up as the user would have it
      local calc = pylsp.warm(bin, 'pylsp_test', dir)
      -- other.py open in a buffer too (then hidden behind calc.py), checked by pylsp
      local other = dir .. '/other.py'
      vim.cmd.edit(vim.fn.fnameescape(other))
      local other_buf = api.nvim_get_current_buf()
      H.wait_attached(other_buf)
      H.wait(function()
        return #vim.lsp.get_clients({ name = 'pylsp_test', bufnr = other_buf }) > 0
          and require('stepwise.query').settled(other_buf, nil)
      end, 30000, "pylsp's first diagnostics of other.py")
      vim.cmd.buffer(calc)
      local third = dir .. '/third.py'
      H.eq(-1, vim.fn.bufnr(third), 'third.py is in no buffer')

      vim.cmd('Stepwise run Print w instead')
      H.wait_idle(cap, 60000)
      local requests = H.recorded(m)
      H.eq(2, #requests, 'two requests to the model')
      local told = last_user_text(requests[2])
      H.contains(told, "other.py:2:7: error: undefined name 'w' (pyflakes)", 'the error of the file the command changed')
      -- never claimed as new: listed under the line saying it was not compared with before
      local head = '(not compared with before: the errors below are in files the round changed whose errors before it are not known)'
      H.contains(told, head .. "\nthird.py:2:7: error: undefined name 'w' (pyflakes)", 'the file no buffer held')
      H.eq('y = 2\nprint(w)', H.buf_text(other_buf), "other.py's buffer holds the command's text")
      -- loaded for its servers, not shown to the user
      local buf = vim.fn.bufnr(third)
      H.truthy(buf > 0 and api.nvim_buf_is_loaded(buf), 'loaded')
      H.eq(false, vim.bo[buf].buflisted, 'unlisted')
      H.eq(-1, vim.fn.bufwinid(buf), 'in no window')
      pylsp.stop('pylsp_test')
    end,
  },
  {
    name = "query pylsp: a file in no buffer that the agent reads and edits is loaded unshown for its errors from before; only the edit's error reaches the model and the chat, the disk holds the change, no buffer is listed or shown",
    timeout = 200000,
    fn = function()
      local bin = pylsp.bin()
      local dir = H.workspace({
        ['calc.py'] = 'x = 1\nprint(x)\n',
        -- an error already there (line 2), which is not the edit's
        ['app.py'] = 'y = 2\nprint(undefined_a)\nprint(y)\n',
      })
      local m = H.mock({
        H.turn({ calls = { { 'read_file', { path = 'app.py' } } } }),
        H.turn({ calls = { { 'edit_file', { path = 'app.py', old_text = 'print(y)', new_text = 'print(w)' } } } }),
        H.turn({ text = 'Changed it.' }),
      })
      H.setup(m)
      local cap = H.capture()
      pylsp.warm(bin, 'pylsp_test', dir)
      local app = dir .. '/app.py'
      H.eq(-1, vim.fn.bufnr(app), 'app.py is in no buffer')
      vim.cmd('Stepwise chat')
      local chat = api.nvim_get_current_buf()
      local function listed()
        local out = {}
        for _, b in ipairs(api.nvim_list_bufs()) do
          if vim.bo[b].buflisted then
            out[#out + 1] = api.nvim_buf_get_name(b)
          end
        end
        return out
      end
      local listed_before = listed()

      vim.cmd('Stepwise run Print w instead')
      H.wait_idle(cap, 60000)
      local requests = H.recorded(m)
      H.eq(3, #requests, 'three requests to the model')
      local told = last_user_text(requests[3])
      H.contains(told, "app.py:3:7: error: undefined name 'w' (pyflakes)", "the edit's error with file and line")
      H.eq(nil, told:find('undefined_a', 1, true), 'the error from before is not new')
      H.eq(nil, told:find('not compared', 1, true), 'compared with before')
      H.wait(function()
        return H.buf_text(chat):find("⚠ app.py:3:7: error: undefined name 'w'", 1, true)
      end, 5000, 'the line in the chat', function()
        return H.buf_text(chat)
      end)
      -- the disk holds the change; the buffer Neovim loaded for the question is unmodified, unlisted, in no window
      H.eq({ 'y = 2', 'print(undefined_a)', 'print(w)' }, vim.fn.readfile(app), 'app.py on disk')
      local buf = vim.fn.bufnr(app)
      if buf > 0 then
        H.eq(false, vim.bo[buf].modified, 'not left modified')
        H.eq(false, vim.bo[buf].buflisted, 'unlisted')
        H.eq(-1, vim.fn.bufwinid(buf), 'in no window')
      end
      H.eq(listed_before, listed(), "the user's buffers did not change")
      pylsp.stop('pylsp_test')
    end,
  },
})
