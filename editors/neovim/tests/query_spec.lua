-- stepwise/query answered by Neovim (lua/stepwise/query.lua): diagnostics waited for by document version,
-- positions recoded between Neovim's bytes and the client's encoding, answers from a coroutine.
local H = require('helpers')
local api = vim.api
local query = require('stepwise.query')

--- Calls on_query as Neovim 0.11 does (in a coroutine) and returns a getter of its answer.
local function ask(params)
  local answer
  local co = coroutine.create(function()
    answer = { query.on_query(nil, params, {}) }
  end)
  assert(coroutine.resume(co))
  return function()
    return answer
  end
end

--- An in-process language server that answers initialize and nothing else, attached to `buf`: a server that
--- may publish, so the buffer's diagnostics are waited for.
local function fake_server(buf)
  local id = vim.lsp.start({
    name = 'fake-server',
    cmd = function()
      return {
        request = function(method, _, callback)
          callback(nil, method == 'initialize' and { capabilities = {} } or vim.NIL)
          return true, 1
        end,
        notify = function()
          return true
        end,
        is_closing = function()
          return false
        end,
        terminate = function() end,
      }
    end,
    root_dir = vim.fn.getcwd(),
  }, { bufnr = buf })
  H.wait(function()
    local c = id and vim.lsp.get_client_by_id(id)
    return c and c.initialized and (c.attached_buffers or {})[buf]
  end, 5000, 'the fake server attached')
  return id
end

local function scratch(text)
  local dir = H.tmpdir('query')
  local path = dir .. '/a.py'
  vim.fn.writefile(vim.split(text, '\n'), path)
  vim.cmd.edit(vim.fn.fnameescape(path))
  return api.nvim_get_current_buf(), vim.uri_from_fname(path)
end

return H.spec({
  {
    name = 'query: columns recode between bytes, UTF-16 and UTF-32 on a line with non-ASCII text',
    fn = function()
      local line = 'é = "😀" + x'
      local x = line:find('x', 1, true) - 1 -- byte column
      H.eq(14, x, 'é and 😀 are 2 and 4 bytes')
      H.eq(11, query.recode_col(line, x, 'utf-8', 'utf-16'), 'bytes to UTF-16 (😀 is a surrogate pair)')
      H.eq(10, query.recode_col(line, x, 'utf-8', 'utf-32'), 'bytes to UTF-32')
      H.eq(x, query.recode_col(line, 11, 'utf-16', 'utf-8'), 'UTF-16 back to bytes')
      H.eq(7, query.recode_col(nil, 7, 'utf-8', 'utf-16'), 'a line that cannot be read keeps its column')
      local d = query.to_lsp_diagnostic(
        { lnum = 0, col = x, end_lnum = 0, end_col = x + 1, severity = 1, message = "undefined name 'x'", source = 'pyflakes' },
        function()
          return line
        end,
        'utf-16'
      )
      H.eq({ start = { line = 0, character = 11 }, ['end'] = { line = 0, character = 12 } }, d.range, 'the range in UTF-16')
      H.eq({ 1, "undefined name 'x'", 'pyflakes' }, { d.severity, d.message, d.source }, 'severity, message, source')
    end,
  },
  {
    name = 'query: diagnostics settled once they changed after the version asked for; else settled false when waitMs runs out; no server: at once',
    timeout = 15000,
    fn = function()
      local buf, uri = scratch('é = 1\nprint(y)\n')
      -- with no language server on the buffer there is nothing to wait for
      local a0 = H.wait(ask({ kind = 'diagnostics', documents = { { uri = uri, version = 99 } }, waitMs = 5000 }), 1000, 'at once')
      H.eq(true, a0[1].items[1].settled, 'no server: settled at once')
      fake_server(buf)
      local ns = api.nvim_create_namespace('fake-server')
      vim.diagnostic.set(ns, buf, { { lnum = 1, col = 6, end_col = 7, severity = 1, message = "undefined name 'y'", source = 'fake' } })
      local now = vim.b[buf].changedtick
      -- published for the version it is at: answered at once
      local got = ask({ kind = 'diagnostics', documents = { { uri = uri, version = now } }, waitMs = 5000 })
      local a = H.wait(got, 2000, 'an answer for the current version')
      H.eq(true, a[1].items[1].settled, 'settled')
      H.eq({ start = { line = 1, character = 6 }, ['end'] = { line = 1, character = 7 } }, a[1].items[1].diagnostics[1].range, 'range')
      -- a version the document has not reached: not settled, after waitMs (and not much later)
      local t0 = vim.uv.now()
      got = ask({ kind = 'diagnostics', documents = { { uri = uri, version = now + 5 } }, waitMs = 300 })
      a = H.wait(got, 3000, 'an answer when waitMs ran out')
      H.eq(false, a[1].items[1].settled, 'not settled')
      H.eq("undefined name 'y'", a[1].items[1].diagnostics[1].message, 'what is known is still given')
      H.truthy(vim.uv.now() - t0 >= 290, 'it waited waitMs')
      -- the document changes, then its server publishes: the waiting answer comes at the publish
      got = ask({ kind = 'diagnostics', documents = { { uri = uri, version = now + 1 } }, waitMs = 10000 })
      H.sleep(100)
      H.eq(nil, got(), 'still waiting: no diagnostics for the new version yet')
      api.nvim_buf_set_lines(buf, 0, 1, false, { 'é = 2' })
      H.eq(now + 1, vim.b[buf].changedtick, 'the version moved')
      vim.diagnostic.set(ns, buf, {})
      a = H.wait(got, 2000, 'the answer at the publish')
      H.eq(true, a[1].items[1].settled, 'settled by the publish')
      H.eq(0, #a[1].items[1].diagnostics, 'the fix left none')
    end,
  },
  {
    name = 'query: navigation with no other client on the buffer answers empty, never hangs; an unknown kind is an error',
    fn = function()
      local _, uri = scratch('def f():\n    pass\n')
      local a = H.wait(ask({ kind = 'definition', uri = uri, position = { line = 0, character = 4 } }), 2000, 'definition')
      H.eq({}, a[1], 'no locations')
      a = H.wait(ask({ kind = 'hover', uri = uri, position = { line = 0, character = 4 } }), 2000, 'hover')
      H.eq(vim.NIL, a[1], 'no hover')
      local result, err = query.on_query(nil, { kind = 'bogus' }, {})
      H.eq(nil, result, 'no result')
      H.truthy(err and err.message:find('unknown kind', 1, true), 'an error naming the kind')
    end,
  },
})
